"""The built-in node catalog (DESIGN section 4): one NodeSpec per type."""
