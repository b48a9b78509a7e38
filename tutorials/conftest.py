"""`make test-tutorials` runs the notebooks on two workers; the slowest
start first, so that neither worker is left alone with a long one at the
end (xdist hands files out in this order with `--no-loadscope-reorder`)."""

SLOWEST_FIRST = (
    "10_train_generate_export.ipynb",
    "11_encoder_and_decoder_uses.ipynb",
    "03_context_vector_vs_attention.ipynb",
    "00_sequence_tasks_and_word_embeddings.ipynb",
    "06_positional_embeddings.ipynb",
)


def pytest_collection_modifyitems(items):
    def rank(item):
        name = item.nodeid.split("::")[0].rsplit("/", 1)[-1]
        if name in SLOWEST_FIRST:
            return SLOWEST_FIRST.index(name)
        return len(SLOWEST_FIRST)

    items.sort(key=rank)
