"""Speed measurements of keras-seq against its peers (not tests)."""
