"""What every command shares: the bad-input error, exit codes, option parsers, profiles, torch threads, file writes.

A leaf: nothing here imports another ``fuzz`` subpackage.
"""
