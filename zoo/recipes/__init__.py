"""The application: the family table (`families`), each recipe's typed
settings (`settings`) and results, training and evaluation (`translation`,
`tasks`), the run directory (`run_dir`, `model_dir`), plots and the demo;
the command line (`zoo.cli`) and the tutorials call it."""
