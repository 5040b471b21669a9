"""Tables, JSON and progress bars: how results are shown to a person."""
