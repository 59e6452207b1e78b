"""Torch-only ``nn.Module`` classes that the catalog's ``build`` functions create.

Each file here imports only torch, math and typing (never revstudio), so the code
exporter can inline its source verbatim and reproduce the compiled module exactly.
Importing this package itself imports nothing; import the files lazily.
"""
