"""End-to-end training recipes used by the command line and the tutorials."""
