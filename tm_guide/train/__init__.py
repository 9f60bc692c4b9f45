"""Train the bundled baseline model (needs the [train] extra: torch + transformers).

Run `python3 -m tm_guide.train --help`. Nothing here is imported by the rest of the package.
"""
