"""Live plots of training runs: ring buffers and row parsing (Qt-free), and the pyqtgraph widgets."""
