"""Ready builders that combine keras-seq layers with the functional API."""
