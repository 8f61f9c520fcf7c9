"""audiopd.batch: the ``audiopd render`` command, many rows -> audio files and a resumable manifest.

inputs.py reads the rows, worker.py plans batches and speaks them through one loaded voice (in this process,
worker processes or Ray actors), manifest.py writes files and manifest lines crash-safely, and driver.py runs a
render and holds the command's arguments. The voice comes from a loader the CLI passes in, so nothing here
imports the facade, and nothing imports torch until a worker starts.
"""
