"""pytest settings for the notebook regression test (``pytest --nbval notebooks``; ``make test`` runs it)."""

#: Seconds nbval waits for each further message of a cell once the kernel has replied that the cell finished.
#: nbval hard-codes 5 s (nbval issues #136 and #231). After a long training cell with many progress-bar
#: updates, the kernel's last messages were seen to arrive up to 30 s late on a busy 2-core machine, and nbval
#: then stops the kernel and fails every later cell of the notebook.
OUTPUT_TIMEOUT_SECONDS = 180


def pytest_collection_modifyitems(items):
    for item in items:
        if hasattr(item, "output_timeout"):  # nbval's IPyNbCell
            item.output_timeout = OUTPUT_TIMEOUT_SECONDS
