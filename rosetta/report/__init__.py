"""Tables, JSON and charts: how results are shown to a person (progress bars: rosetta.progress)."""
