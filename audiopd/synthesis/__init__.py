"""audiopd.synthesis: a text's chunks -> one checked ``Result``, behind the facade (``audiopd.pipeline``).

auto.py is the attempt ladder (decode, check, escalate) and cost.py the model that picks its first path;
join.py joins chunks without clicks, timestamps.py gives word times and their files, result.py assembles a
text's ``Result``, report.py holds the torch-free verdict and report helpers. Nothing here imports torch at
package import, so ``audiopd check`` can use report.py without paying for it.
"""
