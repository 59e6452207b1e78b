"""Headless training runs (DESIGN section 7): ``revstudio train`` and the app's Train button.

``config`` (the project's ``training`` section as a TrainConfig), ``data`` /
``task`` / ``sources`` / ``synthetic`` (what a run trains on and which loss),
``loop`` (the one training function, with callbacks), ``parts`` (device,
precision, optimizer, schedule, loss), ``inrun`` (gradient check and memory
measurement during a run), ``checkpoint`` (atomic, ``weights_only``-safe),
``runs`` (run directories, torch-free), ``output`` (JSON rows, progress bar),
``session`` (one CLI process) and ``launch`` (``--nproc`` through
torch.distributed.run). Importing this package imports nothing heavy.
"""
