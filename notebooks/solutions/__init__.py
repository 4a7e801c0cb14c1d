"""Solutions to the chapters' exercises, one module per chapter (kept out of the reader's way)."""
