"""Modal data from finite-element codes (docs/flexible-bodies.md, "From a finite-element
code"): importers that reduce a code's model to the neutral modal file."""
