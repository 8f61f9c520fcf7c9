"""``audiopd compare``: parallel decoding at each K (and auto) against serial, judged, timed and listenable.

run.py synthesises and scores, stats.py aggregates with paired intervals, plots.py and pages.py draw the static
report (index.html) and the blind listening page (listen.html), command.py is the CLI's body.
"""
