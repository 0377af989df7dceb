"""The `roofreport` command and `python -m roofreport`: the command's process settings
(`tuning`), then the command-line interface (`cli.main`).

The settings belong to the command's own process, never to a program that imports roofreport,
and must come before polars is first imported: so this module imports nothing else of
roofreport until they are applied. A Ctrl-C while the imports run (the command's first second)
exits 130 as one later does, without a traceback.
"""

import signal
import sys

EXIT_INTERRUPTED = 130   # as cli.EXIT_INTERRUPTED: 128 + SIGINT


def main() -> None:
    try:   # (every import inside: a Ctrl-C during any of them is caught)
        from roofreport import tuning

        tuning.before_imports()
        from roofreport.cli import main as cli_main

        tuning.after_imports()
    except KeyboardInterrupt:
        signal.signal(signal.SIGINT, signal.SIG_IGN)   # a second Ctrl-C while exiting: quiet too
        print("roofreport: interrupted", file=sys.stderr)
        sys.exit(EXIT_INTERRUPTED)
    cli_main()


if __name__ == "__main__":
    main()
