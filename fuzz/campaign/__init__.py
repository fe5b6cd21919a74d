"""One campaign driver for the decode properties (``fuzz.run``) and the request lifecycle (``fuzz.lifecycle``)."""

from .driver import CampaignResult, FindingRaised, Hunt, Progress, Tracker, run_campaign

__all__ = ["CampaignResult", "FindingRaised", "Hunt", "Progress", "Tracker", "run_campaign"]
