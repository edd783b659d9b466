"""benchlib: the modules of scripts/bench, the performance benchmark.

Its manual is scripts/bench's docstring.  context holds a run's state
(options, scratch folder, arrays, live mounts, what is measured once per
run) and each *_rows module measures one group of rows into a build's
Results; report prints them and cli ties it together.
"""
