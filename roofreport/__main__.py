"""`python -m roofreport` runs the command-line interface."""

from roofreport.cli import main

if __name__ == "__main__":
    main()
