"""Runtime companion: sync audits and reference fixes (needs the ``runtime`` extra)."""
