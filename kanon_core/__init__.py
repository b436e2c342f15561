"""kanon: statistical disclosure control for survey microdata.

The package is UI-free: everything the dashboard and the ``kanon`` command line show is computed here.
The officer's workflow is the layout: data (``dataset``, ``io``) -> risk (``risk``) -> treatment
(``treat``) -> utility (``utility``) -> recipe (``recipe``, ``history``).
"""

__version__ = "0.1.0"
