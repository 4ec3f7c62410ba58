"""The read side of a build, what the comparison and the service use: a build and its graphs
(``build``, ``graph``), paths from stored distances or on demand (``paths``, ``sssp``: the
binding of liblitpath_sssp), and ``litpath describe``."""
