"""``python -m retention``: the same command line as the ``retention`` script."""

from retention.entry import run

if __name__ == "__main__":
    run()
