"""Reference scenarios, each defined once and run by every engine."""
