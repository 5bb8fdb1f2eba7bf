"""Downstream planner policies (rules a patch stack changes), one registry each."""
