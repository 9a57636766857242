"""Sphinx configuration of flowemu's documentation (``make docs``).

The pages are Markdown (MyST); the API reference is autodoc of the public
names that ``flowemu/__init__.py`` exports, with numpydoc docstrings.
"""

import os
import sys

# the package from this checkout, whether or not it is installed
sys.path.insert(0, os.path.abspath(".."))

import flowemu  # noqa: E402

project = "flowemu"
author = "the flowemu developers"
copyright = "the flowemu developers"
version = release = flowemu.__version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
]

source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build"]

# MyST: $...$ is not math here (prices and shell variables), explicit (label)= targets
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

# autodoc: signatures as written, members in source order, no import of heavy optional deps
autodoc_member_order = "bysource"
autodoc_typehints = "none"
autosummary_generate = False

# numpydoc renders the docstrings; class members are listed by the pages themselves
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

html_theme = "pydata_sphinx_theme"
html_title = f"flowemu {release}"
html_static_path = ["_static"]
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": [],
}
html_theme_options["header_links_before_dropdown"] = 6
# the pages have no sub-pages: no left sidebar, the page's own contents on the right
html_sidebars = {"**": []}
