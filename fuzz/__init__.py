"""The fuzz harness: properties, targets, campaigns, case files and the command line."""
