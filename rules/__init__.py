"""The rule catalog: one module per rule (``sgNNN_name.py``), discovered at run time."""
