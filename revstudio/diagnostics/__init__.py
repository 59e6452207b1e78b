"""Diagnostics: is the reversible network right, and what does it cost?

``check.full_check`` (= ``revstudio.check``) adds reversible regions and a static
memory estimate (``estimate``) to the core check; both are torch-free.
``gradcheck.compare_modes`` measures gradient agreement and inversion error;
``memory.measure_step`` measures peak and kept bytes of a training step.
"""
