"""Simulated: there is no context to push."""
