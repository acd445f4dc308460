"""The notebook result view: an ipywidgets view with buttons, over a static HTML rendering."""
