# %% [markdown]
# # 09 · Why the translator is a functional graph, not a Sequential stack
#
# A `keras.Sequential` model is a chain: every layer takes the one output of
# the layer before it. An encoder-only classifier fits that pattern. The
# encoder-decoder Transformer of Fig. 7.16 does not: it has two inputs, and
# the encoder output $z^*$ enters the cross attention of *every* decoder
# block. This notebook shows both facts concretely with the zoo's builders:
# the classifier is rebuilt as a `Sequential` model with identical outputs,
# while three attempts to do the same with the translator fail, each for a
# reason that can be read off the graph. It then writes the translator's
# graph with the functional API, checks that it reproduces
# `zoo.build_translator` exactly, and draws it with `keras.utils.plot_model`.

# %%
import os
import re
import tempfile

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # keep C++ logs out of outputs

import keras
import numpy as np
from IPython.display import Image, Markdown, display

import zoo
from keras_seq.layers import (
    MultiHeadAttention,
    TokenAndPositionEmbedding,
    TransformerDecoderBlock,
    TransformerEncoderBlock,
)

QUICK = os.environ.get("KERAS_SEQ_QUICK", "0") == "1"
keras.utils.set_random_seed(0)
IMAGES = os.path.join(os.pardir, "docs", "images")
FIGURES = tempfile.mkdtemp() if QUICK else IMAGES


def show_table(headers, rows):
    """Render rows as a Markdown table in the notebook."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    display(Markdown("\n".join(lines)))


def first_line(error):
    """The informative line of an exception, without terminal colours."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(error))
    # Keras wraps errors raised while inferring output shapes; keep the cause.
    text = text.split("Error encountered:", 1)[-1]
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    useful = [line for line in lines if not line.startswith("Exception encountered")]
    return f"{type(error).__name__}: {(useful or lines)[0]}"


# %% [markdown]
# ## Two models, two shapes of graph
#
# A `Sequential` model computes a composition,
#
# $$ \hat y = f_L(\,f_{L-1}(\cdots f_1(x)\cdots)), $$
#
# so each $f_\ell$ has exactly one argument. The translator computes the
# code of the source once, $z^* = f_{\text{encoder}}(x^{(1)}, \dots,
# x^{(T)})$, and then, for every target position (Eq. 7.34),
#
# $$ \hat y^{(t)} = f_{\text{decoder}}\big(z^*, (\tilde y^{(1)}, \dots,
# \tilde y^{(t-1)})\big), $$
#
# a function of two arguments, where each decoder block reads its own
# input *and* $z^*$. We build the tiny presets, with two encoder and two
# decoder blocks for the translator so that the reuse of $z^*$ shows, and
# read from `keras.utils.model_to_dot` which layers feed which.

# %%
VOCABULARY = 100
classifier = zoo.build_classifier("tiny", vocabulary_size=VOCABULARY)
translator = zoo.build_translator(
    "tiny",
    source_vocabulary_size=VOCABULARY,
    target_vocabulary_size=VOCABULARY,
    num_encoder_layers=2,
    num_decoder_layers=2,
)


def inbound_layers(model):
    """{layer name: names of the layers whose outputs it takes}, read from
    the model's Graphviz description. Keras also records the small
    operations that derive the padding mask; a layer fed by one of them
    gets "(padding mask)" instead of a layer name."""
    graph = keras.utils.model_to_dot(model, show_shapes=False)
    layer_names = {layer.name for layer in model.layers}
    names = {}
    for node in graph.get_nodes():
        found = re.search(r"<b>(.*?)</b>", node.get_label() or "")
        if found:
            names[node.get_name()] = found.group(1)
    inbound = {name: [] for name in names.values() if name in layer_names}
    for edge in graph.get_edges():
        source, destination = names[edge.get_source()], names[edge.get_destination()]
        if destination in inbound:
            inbound[destination].append(
                source if source in layer_names else "(padding mask)"
            )
    return inbound


def layer_sources(sources):
    return [source for source in sources if source != "(padding mask)"]


for model in (classifier, translator):
    inbound = inbound_layers(model)
    show_table(
        [f"`{model.name}` layer", "takes the outputs of"],
        [
            (name, ", ".join(sources) or "(model input)")
            for name, sources in inbound.items()
        ],
    )

classifier_inbound = inbound_layers(classifier)
translator_inbound = inbound_layers(translator)
assert all(len(layer_sources(s)) <= 1 for s in classifier_inbound.values())
for i, previous in enumerate(["target_dropout", "decoder_block_0"]):
    assert sorted(layer_sources(translator_inbound[f"decoder_block_{i}"])) == sorted(
        [previous, "encoder_norm"]
    )
inputs = [name for name, sources in translator_inbound.items() if not sources]
print("classifier: every layer has at most one input layer")
print(f"translator: model inputs {inputs}; each decoder block reads encoder_norm")

# %% [markdown]
# `encoder_norm` is the end of the encoder (an identity for the book's
# post-norm blocks, a layer norm for pre-norm ones), so its output is
# $z^*$. The residual connections and the two sublayers of each block are
# inside the block layers; at the level of blocks the encoder is still a
# chain. The "(padding mask)" entries are the two small operations
# (`not_equal`, `cast`) by which Keras turns token ids into the boolean mask
# of real tokens and hands it to the encoder blocks: side information that
# travels with the chain, not a second input (a `Sequential` model carries
# it too, as the next section checks). The Keras summary of a multi-input
# model says the same in its "Connected to" column.

# %%
translator.summary(line_length=110)

# %% [markdown]
# ## The classifier is a chain, so `Sequential` can express it
#
# We put the classifier's own layers, in order, into a `keras.Sequential`
# model. The padding mask of the token embedding (`mask_zero`) flows through
# a `Sequential` model as it does through the functional one, so even the
# masked mean pooling sees the same positions. The outputs agree on a padded
# batch.

# %%
as_sequential = keras.Sequential(
    [keras.Input((None,), dtype="int32", name="token_ids")] + classifier.layers[1:],
    name="classifier_as_sequential",
)
token_ids = np.array([[5, 17, 42, 8, 0, 0], [9, 3, 77, 21, 64, 11]], "int32")
functional_logits = keras.ops.convert_to_numpy(classifier(token_ids))
sequential_logits = keras.ops.convert_to_numpy(as_sequential(token_ids))
np.testing.assert_allclose(sequential_logits, functional_logits, atol=1e-6)
assert as_sequential.count_params() == classifier.count_params()
print(
    f"{len(as_sequential.layers)} layers, {as_sequential.count_params():,} parameters"
)
print(
    "max |difference| of the logits:",
    np.abs(sequential_logits - functional_logits).max(),
)

# %% [markdown]
# ## The translator is not: three attempts that fail
#
# **1. Its layers in a list.** A `Sequential` model has one input, and the
# translator's layer list starts with two `InputLayer`s, one for the source
# ids and one for the target ids.

# %%
try:
    keras.Sequential(translator.layers)
except ValueError as error:
    print(first_line(error))
else:
    raise AssertionError("a Sequential model accepted two inputs")

# %% [markdown]
# **2. Cross attention as a step of the chain.** Attention takes a query
# *and* keys and values; in cross attention they come from different places
# (the decoder state and $z^*$). A chain hands a layer one tensor only.

# %%
try:
    keras.Sequential(
        [keras.Input((None, 16)), MultiHeadAttention(num_heads=2, key_dim=8)]
    )
except ValueError as error:
    print(first_line(error))
else:
    raise AssertionError("attention built from one tensor")

# %% [markdown]
# **3. A decoder block as a step of the chain.** This one does not fail at
# once, which makes it the worst of the three: given one tensor, a
# `TransformerDecoderBlock` builds *without* cross attention, the block of a
# decoder-only language model. It has fewer parameters than the
# translator's decoder block, exactly the cross-attention sublayer, four
# $d \times d$ projections with biases plus a layer norm,
# $4(d^2 + d) + 2d$ with $d = 16$; and it refuses an encoder output later.

# %%
d = translator.model_dim
assert d == 16  # the d of the sentence above
chained = keras.Sequential(
    [keras.Input((None, d)), TransformerDecoderBlock(num_heads=2, ff_dim=32)]
)
in_translator = translator.get_layer("decoder_block_0").count_params()
missing = in_translator - chained.count_params()
show_table(
    ["decoder block", "parameters"],
    [
        ("in the translator (self + cross attention + FFN)", f"{in_translator:,}"),
        ("in a Sequential chain (self attention + FFN)", f"{chained.count_params():,}"),
        ("difference", f"{missing:,}"),
        ("cross attention, 4(d² + d) + 2d", f"{4 * (d * d + d) + 2 * d:,}"),
    ],
)
assert missing == 4 * (d * d + d) + 2 * d
try:
    chained.layers[0](keras.ops.ones((1, 3, d)), keras.ops.ones((1, 5, d)))
except ValueError as error:
    print(first_line(error))
else:
    raise AssertionError("a block without cross attention used an encoder output")

# %% [markdown]
# ## The functional API writes the graph as it is drawn
#
# With `keras.Input`s as named placeholders, each layer call is an edge of
# the graph, and a layer may take any earlier tensor. The translator is then
# a few lines: embed and encode the source, embed the target, and pass
# `encoded` to every decoder block. We build it from the package's layers
# with the same names as the zoo's builder, copy the weights over by name,
# and check that the outputs are those of `zoo.build_translator` (dropout is
# inactive at inference, so its layers are left out).

# %%
config = translator.get_config()
block_arguments = {"num_heads": config["num_heads"], "ff_dim": config["ff_dim"]}


def embedding(name):
    return TokenAndPositionEmbedding(
        VOCABULARY,
        config["max_length"],
        config["model_dim"],
        positional=config["positional"],  # sinusoidal, Eq. (7.29)
        scale_embeddings=config["scale_embeddings"],
        name=name,
    )


source = keras.Input((None,), dtype="int32", name="encoder_token_ids")
target = keras.Input((None,), dtype="int32", name="decoder_token_ids")
x = embedding("source_embedding")(source)  # (B, S, D) with the source mask
for i in range(config["num_encoder_layers"]):
    x = TransformerEncoderBlock(**block_arguments, name=f"encoder_block_{i}")(x)
encoded = x  # z*, used by every decoder block below
y = embedding("target_embedding")(target)  # (B, T, D)
for i in range(config["num_decoder_layers"]):
    y = TransformerDecoderBlock(**block_arguments, name=f"decoder_block_{i}")(
        y, encoded
    )
logits = keras.layers.Dense(VOCABULARY, name="logits")(y)  # (B, T, V)
handmade = keras.Model(
    {"encoder_token_ids": source, "decoder_token_ids": target}, logits
)

for layer in handmade.layers:
    if layer.weights:
        layer.set_weights(translator.get_layer(layer.name).get_weights())
batch = {
    "encoder_token_ids": np.array([[12, 7, 33, 4, 0], [5, 9, 2, 61, 18]], "int32"),
    "decoder_token_ids": np.array([[2, 40, 11, 0], [2, 8, 27, 3]], "int32"),
}
difference = np.abs(
    keras.ops.convert_to_numpy(handmade(batch))
    - keras.ops.convert_to_numpy(translator(batch))
).max()
np.testing.assert_allclose(
    keras.ops.convert_to_numpy(handmade(batch)),
    keras.ops.convert_to_numpy(translator(batch)),
    atol=1e-5,
)
assert handmade.count_params() == translator.count_params()
print(
    f"{handmade.count_params():,} parameters in both; max |difference| {difference:.1e}"
)

# %% [markdown]
# ## The picture
#
# `keras.utils.plot_model` draws the functional graph with Graphviz. The two
# inputs start two branches; the encoder's last layer fans out to both
# decoder blocks, which is the cross attention of Fig. 7.16. The `NotEqual`
# and `Cast` nodes derive the source padding mask for the encoder blocks.

# %%
translator_png = os.path.join(FIGURES, "tutorial_09_translator_graph.png")
keras.utils.plot_model(
    translator,
    to_file=translator_png,
    show_shapes=True,
    show_layer_names=True,
    dpi=72,
)
display(Image(translator_png))

# %% [markdown]
# The classifier, for contrast, is one line of layers from `token_ids` to
# the class logits, with the padding mask (`NotEqual`, `Cast`) running beside
# it to the encoder block and the pooling.

# %%
classifier_png = os.path.join(tempfile.mkdtemp(), "classifier.png")
keras.utils.plot_model(
    classifier,
    to_file=classifier_png,
    show_shapes=True,
    show_layer_names=True,
    dpi=60,
)
display(Image(classifier_png))

# %% [markdown]
# **What to take away.** `Sequential` suits a model that is one chain of
# single-input layers: the encoder-only classifier, here rebuilt from its
# own layers with the same outputs. The encoder-decoder Transformer needs
# the functional API (or a subclassed model) because of two inputs and of
# $z^*$ feeding every decoder block; forcing it into a chain either fails
# outright or, worse, silently drops cross attention.
