"""The application: the family table (`families`), one module per family
holding its `Recipe`, training, result type, evaluation and export
(`translator`, `rnn_translator`, `classifier`, `language_model`,
`masked_language_model`, `rnn_language_model`) over the skeleton of
`recipe`, each recipe's typed settings (`settings`), the run directory
(`run_dir`) and the trained model loaded from it (`model_dir`, `trained`),
plots and the demo; the command line (`zoo.cli`) and the tutorials call it."""
