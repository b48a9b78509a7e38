# %% [markdown]
# # 08 · What a sequence layer costs: operations, sequential steps, path length
#
# Three layers can turn a sequence of $T$ vectors of width $d$ into another
# such sequence: self attention, a recurrent layer and a convolution. The
# lecture notes compare them on four counts (parameters, operations,
# sequential steps and maximum path length). This notebook counts the
# operations of each layer analytically, checks the parameter counts against
# real Keras layers, times the layers (`keras_seq.layers.MultiHeadAttention`,
# `keras.layers.SimpleRNN`, `keras.layers.Conv1D`) as $T$ and $d$ grow, and
# measures path length with gradients. The analytic crossover at $T = d$
# holds for the attention lookup alone; the measured times move it to a
# larger $T$, because the recurrent layer pays for $T$ steps that cannot run
# at once.

# %%
import math
import os
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # keep C++ logs out of outputs

import keras
import matplotlib.pyplot as plt
import numpy as np
import tensorflow as tf
from IPython.display import Markdown, display

from keras_seq.layers import MultiHeadAttention

QUICK = os.environ.get("KERAS_SEQ_QUICK", "0") == "1"
keras.utils.set_random_seed(0)

BATCH = 4 if QUICK else 8
REPEATS = 3 if QUICK else 7
MIN_SAMPLE = 0.005 if QUICK else 0.02  # seconds per timing sample
FIXED_D = 128  # d for the sweep over T
FIXED_T = 128  # T for the sweep over d
LENGTHS = [16, 64, 256, 1024] if QUICK else [16, 32, 64, 128, 256, 512, 1024, 2048]
WIDTHS = [32, 128, 512] if QUICK else [16, 32, 64, 128, 256, 512, 1024]
KERNEL = 3  # convolution kernel size k
HEADS = 4
# Quick mode takes 3 timing samples of 5 ms each, too few to check claims
# about measured times when other processes share the CPU; the full run,
# whose outputs the text describes, checks them.
CHECK_TIMES = not QUICK
IMAGES = os.path.join(os.pardir, "docs", "images")


def show_table(headers, rows):
    """Render rows as a Markdown table in the notebook."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    display(Markdown("\n".join(lines)))


# %% [markdown]
# ## The table of the lecture notes and of Vaswani et al.
#
# | layer | parameters | operations | sequential steps | maximum path length |
# |---|---|---|---|---|
# | convolution, kernel $k$ | $O(k\,d^2)$ | $O(k\,T\,d^2)$ | $O(1)$ | $O(T/k)$ |
# | dilated convolution | $O(k\,d^2)$ | $O(k\,T\,d^2)$ | $O(1)$ | $O(\log_k T)$ |
# | recurrent | $O(d^2)$ | $O(T\,d^2)$ | $O(T)$ | $O(T)$ |
# | self attention | $O(d^2)$ | $O(T^2 d)$ | $O(1)$ | $O(1)$ |
#
# The notes' summary writes $O(T)$ sequential steps and path length for the
# convolution; their detailed count gives $O(T/k)$, reducible to
# $O(\log T)$ with a tree of layers. Vaswani et al. (2017) give one
# convolution layer $O(1)$ sequential operations, since it computes every
# position at once, and in their Table 1 a maximum path length of
# $O(\log_k T)$, the figure for *dilated* convolutions; their text adds that
# with contiguous kernels a stack of $O(T/k)$ layers is needed before every
# output can see every input. The table above has both rows, and both are
# measured below: $\lceil (T-1)/(k-1) \rceil$ contiguous layers and
# $\lceil \log_k T \rceil$ dilated ones.
#
# ## Counting operations
#
# We count multiply-adds (one multiplication and one addition; FLOPs are
# twice as many) of one layer on one sequence, ignoring biases, the softmax
# and the activation, which are lower order.
#
# * **Recurrent layer.** Each step computes
#   $h_{(t)} = \phi(W_{xh} x_{(t)} + W_{hh} h_{(t-1)} + b_h)$ with two
#   $d \times d$ matrices: $2d^2$ per step, $2\,T\,d^2$ for the sequence.
# * **Convolution.** Each output position reads $k$ input vectors of width
#   $d$ for each of its $d$ output channels: $k\,d^2$ per position,
#   $k\,T\,d^2$ in all.
# * **Attention lookup.** Each of the $T$ queries takes a dot product of
#   length $d$ with each of the $T$ keys (the scores $QK^\top$), then mixes
#   $T$ values of width $d$: $2\,T^2 d$.
# * **A self-attention layer** also projects queries, keys, values and the
#   combined heads, Eq. (7.25)–(7.26): four $d \times d$ products per
#   position, $4\,T\,d^2$, on top of the lookup.
#
# The lookup costs less than the recurrence exactly when
# $2T^2 d < 2Td^2$, that is when $T < d$. In a full layer the projections
# cost more than the lookup as long as $4Td^2 > 2T^2 d$, that is $T < 2d$.


# %%
def recurrent_macs(T, d):
    return 2 * T * d**2


def convolution_macs(T, d, k=KERNEL):
    return k * T * d**2


def attention_lookup_macs(T, d):
    return 2 * T**2 * d


def attention_layer_macs(T, d):
    return 4 * T * d**2 + attention_lookup_macs(T, d)


grid = [(T, d) for T in range(1, 600, 7) for d in (32, 64, 128, 256, 512)]
for T, d in grid:
    assert (attention_lookup_macs(T, d) < recurrent_macs(T, d)) == (T < d)
    projections = attention_layer_macs(T, d) - attention_lookup_macs(T, d)
    assert (projections > attention_lookup_macs(T, d)) == (T < 2 * d)
print(f"checked the two crossovers on {len(grid)} (T, d) pairs")

T, d = 64, 128  # a typical chunk: T < d
show_table(
    ["layer", f"multiply-adds at T={T}, d={d}", "relative to the recurrent layer"],
    [
        (name, f"{fn(T, d):,}", f"{fn(T, d) / recurrent_macs(T, d):.2f}")
        for name, fn in [
            ("recurrent", recurrent_macs),
            (f"convolution, k={KERNEL}", convolution_macs),
            ("attention lookup", attention_lookup_macs),
            ("self-attention layer", attention_layer_macs),
        ]
    ],
)

# %% [markdown]
# ## Parameters, checked on real layers
#
# With $d$ split into 4 heads of width $d/4$ the attention
# layer has four $d \times d$ kernels and four bias vectors, $4d^2 + 4d$; the
# recurrent layer $W_{xh}$, $W_{hh}$ and $b_h$, $2d^2 + d$; the
# convolution a $k \times d \times d$ kernel and a bias, $k\,d^2 + d$. None of
# them grows with $T$.


# %%
def make_layers(d):
    """The three layers at width d, each mapping (B, T, d) to (B, T, d)."""
    attention = MultiHeadAttention(num_heads=HEADS, key_dim=d // HEADS)
    recurrent = keras.layers.SimpleRNN(d, return_sequences=True)
    convolution = keras.layers.Conv1D(d, KERNEL, padding="same")
    return {"self attention": attention, "SimpleRNN": recurrent, "Conv1D": convolution}


def apply(name, layer, x):
    return layer(x, x) if name == "self attention" else layer(x)  # (B, T, d)


expected = {
    "self attention": lambda d: 4 * d**2 + 4 * d,
    "SimpleRNN": lambda d: 2 * d**2 + d,
    "Conv1D": lambda d: KERNEL * d**2 + d,
}
rows = []
for d in (64, 128, 512):
    for name, layer in make_layers(d).items():
        apply(name, layer, keras.ops.zeros((1, 5, d)))  # builds the weights
        assert layer.count_params() == expected[name](d), (name, d)
        rows.append((name, d, f"{layer.count_params():,}"))
show_table(["layer", "d", "parameters (asserted)"], rows)

# %% [markdown]
# ## Operations against $T$ at fixed $d$
#
# The lookup grows as $T^2$, the recurrence and the convolution as $T$. In
# the left panel of the figure below, the curves of the lookup and of the
# recurrent layer cross at $T = d$ (dashed); the full attention layer stays
# above the recurrent layer at every $T$, since its projections alone,
# $4Td^2$, cost twice the recurrence, $2Td^2$.

# %%
counts = {
    "self-attention layer": attention_layer_macs,
    "attention lookup only": attention_lookup_macs,
    "recurrent": recurrent_macs,
    f"convolution, k={KERNEL}": convolution_macs,
}
Ts = np.array(LENGTHS, dtype=float)
for T, d in grid:
    assert 4 * T * d**2 == 2 * recurrent_macs(T, d)
    assert attention_layer_macs(T, d) > recurrent_macs(T, d)


def plot_flops(ax, d):
    for (label, fn), style in zip(counts.items(), ["-o", ":", "-s", "-^"]):
        ax.loglog(Ts, [2 * fn(T, d) for T in Ts], style, label=label)
    ax.axvline(d, color="gray", linestyle="--", label=f"T = d = {d}")
    ax.set_xlabel("sequence length T")
    ax.set_ylabel("FLOPs per sequence (2 x multiply-adds)")
    ax.set_title(f"Operations against T, d = {d}")
    ax.legend(fontsize=8)


# %% [markdown]
# ## Wall time against $T$ and $d$
#
# Each layer runs inside a TensorFlow graph function on a batch of random
# sequences (8 in the full run, 4 in quick mode). After a warm-up call we
# take 7 samples (3 in quick mode), each the mean time of enough calls to
# last 20 ms (5 ms), with the four functions taking turns, and report the
# fastest sample: other processes sharing the CPU can only add time, so the
# minimum is the steadiest estimate, as the `timeit` documentation advises.
# The numbers stay noisy; their slopes are what matters. Next to the
# attention layer we time the lookup alone with
# `keras.ops.dot_product_attention` on queries, keys and values of the same
# shapes, so that the measured lookup can be compared with the $T^2 d$
# count.


# %%
def fastest_seconds(functions, x, repeats=REPEATS):
    """{name: fastest-sample seconds of one call of fn(x)} for named functions."""
    numbers = {}
    for name, fn in functions.items():
        fn(x)  # traces and warms up
        start = time.perf_counter()
        keras.ops.convert_to_numpy(fn(x))
        once = time.perf_counter() - start
        # As `timeit` does, a sample averages enough calls to last
        # MIN_SAMPLE seconds, so that short calls are not timer noise.
        numbers[name] = max(1, int(MIN_SAMPLE / max(once, 1e-6)))
    samples = {name: [] for name in functions}
    # The functions take turns within each repeat, so a burst of load from
    # other processes slows all of them alike, not one.
    for _ in range(repeats):
        for name, fn in functions.items():
            start = time.perf_counter()
            for _ in range(numbers[name]):
                output = fn(x)
            keras.ops.convert_to_numpy(output)
            samples[name].append((time.perf_counter() - start) / numbers[name])
    return {name: float(np.min(times)) for name, times in samples.items()}


def lookup_only(d):
    heads, width = HEADS, d // HEADS

    def lookup(x):
        q = keras.ops.reshape(x, (BATCH, -1, heads, width))  # (B, T, N, H)
        return keras.ops.dot_product_attention(q, q, q)  # (B, T, N, H)

    return lookup


def time_layers(T, d):
    """Median seconds of each layer (and the lookup alone) at (T, d)."""
    x = keras.random.normal((BATCH, T, d), seed=1)
    functions = {
        name: tf.function(lambda x, name=name, layer=layer: apply(name, layer, x))
        for name, layer in make_layers(d).items()
    }
    functions["attention lookup only"] = tf.function(lookup_only(d))
    return fastest_seconds(functions, x)


assert (BATCH, REPEATS, MIN_SAMPLE) == ((4, 3, 0.005) if QUICK else (8, 7, 0.02))
started = time.time()
by_length = {T: time_layers(T, FIXED_D) for T in LENGTHS}
by_width = {d: time_layers(FIXED_T, d) for d in WIDTHS}
print(
    f"timed {len(by_length) + len(by_width)} settings in {time.time() - started:.0f} s"
)

names = ["self attention", "attention lookup only", "SimpleRNN", "Conv1D"]
show_table(
    [f"T (d = {FIXED_D})"] + [f"{n} (ms)" for n in names],
    [[T] + [f"{1e3 * by_length[T][n]:.2f}" for n in names] for T in LENGTHS],
)
show_table(
    [f"d (T = {FIXED_T})"] + [f"{n} (ms)" for n in names],
    [[d] + [f"{1e3 * by_width[d][n]:.2f}" for n in names] for d in WIDTHS],
)


# %%
def crossover(xs, a, b):
    """First x (log-interpolated) where curve a rises above curve b."""
    ratio = np.log(np.asarray(a) / np.asarray(b))
    for i in range(1, len(xs)):
        if ratio[i - 1] <= 0 < ratio[i]:
            w = -ratio[i - 1] / (ratio[i] - ratio[i - 1])
            return float(np.exp(np.log(xs[i - 1]) + w * np.log(xs[i] / xs[i - 1])))
    return None


def series(table, keys, name):
    return [table[k][name] for k in keys]


styles = {
    "self attention": "-o",
    "attention lookup only": ":",
    "SimpleRNN": "-s",
    "Conv1D": "-^",
}
fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
plot_flops(left, FIXED_D)
for name in names:
    right.loglog(
        LENGTHS,
        [1e3 * s for s in series(by_length, LENGTHS, name)],
        styles[name],
        label=name,
    )
right.axvline(FIXED_D, color="gray", linestyle="--", label=f"T = d = {FIXED_D}")
right.set_xlabel("sequence length T")
right.set_ylabel(f"milliseconds per batch of {BATCH} (fastest)")
right.set_title(f"Measured time against T, d = {FIXED_D} (CPU)")
right.legend(fontsize=8)
fig.tight_layout()
if not QUICK:
    fig.savefig(os.path.join(IMAGES, "tutorial_08_flops_and_time.png"), dpi=110)
plt.show()

layer_vs_rnn = crossover(
    LENGTHS,
    series(by_length, LENGTHS, "self attention"),
    series(by_length, LENGTHS, "SimpleRNN"),
)
lookup_vs_rnn = crossover(
    LENGTHS,
    series(by_length, LENGTHS, "attention lookup only"),
    series(by_length, LENGTHS, "SimpleRNN"),
)
print(f"d = {FIXED_D}: analytic crossover of lookup and recurrence at T = {FIXED_D}")


def describe(value, name):
    """Where the measured time of `name` rises above SimpleRNN's, in words."""
    if value is not None:
        return f"is slower than SimpleRNN from T ~ {value:.0f} on"
    if by_length[LENGTHS[0]][name] > by_length[LENGTHS[0]]["SimpleRNN"]:
        return f"is slower than SimpleRNN at every measured T, from {LENGTHS[0]}"
    return f"is not slower than SimpleRNN at any measured T, up to {LENGTHS[-1]}"


for label, value, name in [
    ("attention layer", layer_vs_rnn, "self attention"),
    ("lookup", lookup_vs_rnn, "attention lookup only"),
]:
    print(f"measured: the {label} {describe(value, name)}")
# The intro's claim: on the clock the lookup's crossover moves to a larger T.
assert not CHECK_TIMES or (lookup_vs_rnn is not None and lookup_vs_rnn > FIXED_D)

# %% [markdown]
# Against $d$ at fixed $T$ the order flips: the recurrent layer and the
# convolution grow as $d^2$, the lookup only as $d$.

# %%
fig, ax = plt.subplots(figsize=(6, 4.2))
for name in names:
    ax.loglog(
        WIDTHS,
        [1e3 * s for s in series(by_width, WIDTHS, name)],
        styles[name],
        label=name,
    )
ax.axvline(FIXED_T, color="gray", linestyle="--", label=f"d = T = {FIXED_T}")
ax.set_xlabel("width d")
ax.set_ylabel(f"milliseconds per batch of {BATCH} (fastest)")
ax.set_title(f"Measured time against d, T = {FIXED_T}")
ax.legend(fontsize=8)
plt.show()


# %%
def slope(xs, ys):
    """Exponent p of y ~ x^p, least squares on the upper half of the points."""
    half = len(xs) // 2
    return float(np.polyfit(np.log(xs[half:]), np.log(ys[half:]), 1)[0])


in_T = {name: slope(LENGTHS, series(by_length, LENGTHS, name)) for name in names}
in_d = {name: slope(WIDTHS, series(by_width, WIDTHS, name)) for name in names}
counted_T = {"attention lookup only": 2, "SimpleRNN": 1, "Conv1D": 1}
counted_d = {"attention lookup only": 1, "SimpleRNN": 2, "Conv1D": 2}
show_table(
    ["layer", "time ~ T^p, p =", "counted", "time ~ d^p, p =", "counted"],
    [
        (
            name,
            f"{in_T[name]:.2f}",
            counted_T.get(name, "1 to 2"),
            f"{in_d[name]:.2f}",
            counted_d.get(name, "1 to 2"),
        )
        for name in names
    ],
)
others_T = max(in_T["SimpleRNN"], in_T["Conv1D"])
print(
    f"lookup against T: {in_T['attention lookup only']:.2f}; recurrence and "
    f"convolution: at most {others_T:.2f}"
)
if CHECK_TIMES:  # the paragraph below, checked on the fitted numbers
    assert in_T["attention lookup only"] > 1.6, in_T
    assert in_T["attention lookup only"] > others_T + 0.5, in_T

# %% [markdown]
# The fits use the larger half of the sizes. The one the comparison turns on
# comes out clearly (checked in the full run; quick mode's few short
# samples are too noisy): against $T$, the lookup's exponent is above 1.6,
# near its count of 2 or beyond it when the $T \times T$ score matrices
# outgrow the processor's caches or other work shares the CPU, and at least
# 0.5 above the exponents of the recurrence and the convolution, which are
# counted 1. The $T^2$ term is visible on the clock.
# The other fits are rougher. At these sizes the fixed costs of each call and
# of each recurrent step still weigh, which flattens the curves, and the
# short calls of the width sweep are the ones most disturbed by other work on
# the CPU; read them in the table as this run's numbers, not as a test of
# the counts. The whole attention layer is counted between 1 and 2 in both
# sweeps, as its projections ($T d^2$) and its lookup ($T^2 d$) take turns
# in dominating.
#
# ## Sequential steps: $O(T)$ against $O(1)$
#
# The recurrent layer runs a loop of $T$ steps, each waiting for the one
# before. The slope of its time against $T$ is the cost of one step. If the
# arithmetic set that cost, a step at $d = 128$ would cost $16^2 = 256$ times
# a step at $d = 8$; in fact the ratio stays below a tenth of that (printed
# below), because most of a step is the loop itself. Self attention and the
# convolution do all positions in one step per layer.

# %%
tiny_width = 8
assert (FIXED_D // tiny_width) ** 2 == 256
tiny = {T: time_layers(T, tiny_width) for T in LENGTHS}
step_tiny = np.polyfit(LENGTHS, series(tiny, LENGTHS, "SimpleRNN"), 1)[0]
step_wide = np.polyfit(LENGTHS, series(by_length, LENGTHS, "SimpleRNN"), 1)[0]
print(f"SimpleRNN, one sequential step: {1e6 * step_tiny:.1f} us at d = {tiny_width}")
print(f"SimpleRNN, one sequential step: {1e6 * step_wide:.1f} us at d = {FIXED_D}")
print(
    f"ratio {step_wide / step_tiny:.1f}, against {(FIXED_D / tiny_width) ** 2:.0f} "
    "for the arithmetic"
)
assert step_wide / step_tiny < 0.1 * (FIXED_D / tiny_width) ** 2

largest = LENGTHS[-1]
rows = []
for name, fn in [
    ("self attention", attention_layer_macs),
    ("attention lookup only", attention_lookup_macs),
    ("SimpleRNN", recurrent_macs),
    ("Conv1D", convolution_macs),
]:
    flops = 2 * BATCH * fn(largest, FIXED_D)
    rows.append((name, f"{flops / by_length[largest][name] / 1e9:.1f}"))
show_table([f"layer (T = {largest}, d = {FIXED_D})", "achieved GFLOP/s"], rows)
rate = dict((name, float(value)) for name, value in rows)
if CHECK_TIMES:
    assert rate["Conv1D"] > 2 * rate["SimpleRNN"], rate

# %% [markdown]
# The achieved rate says the same thing from the hardware's side. The
# convolution and the recurrent layer do the same kind of arithmetic,
# $O(T d^2)$ multiply-adds, yet the convolution runs it at more than twice
# the rate: it hands the processor a few large matrix products, the
# recurrent layer $T$ small ones in a row. The attention layer's work is a
# few large products too, with its rate printed in the same table.
#
# ## Maximum path length
#
# The path length between input position $j$ and output position $i$ is the
# number of layers (or steps) a signal, and the gradient on its way back,
# must cross. We find it with gradients: an output depends on an input
# exactly when the gradient between them is not zero.
#
# For causal convolutions with contiguous kernels of size $k$, each layer
# widens the receptive field by $k - 1$ positions, so the last output sees
# the first input after $\lceil (T-1)/(k-1) \rceil$ layers, the $O(T/k)$ of
# Vaswani et al.'s text. With dilations $1, k, k^2, \dots$ the field
# triples (for $k = 3$) with every layer, and $\lceil \log_k T \rceil$ layers
# suffice, the $O(\log_k T)$ of their Table 1. One self-attention layer
# connects every pair.


# %%
def layers_needed(T, dilated=False, width=4):
    """Fewest stacked causal Conv1D layers whose last output sees input 0."""
    x = tf.random.normal((1, T, width), dtype="float64")
    stack = []
    for depth in range(1, T + 1):
        # Averaging kernels in float64: no weight is zero by accident and no
        # gradient underflows, even through 64 layers.
        stack.append(
            keras.layers.Conv1D(
                width,
                KERNEL,
                padding="causal",
                dilation_rate=KERNEL ** (depth - 1) if dilated else 1,
                kernel_initializer=keras.initializers.Constant(1 / (KERNEL * width)),
                dtype="float64",
            )
        )
        with tf.GradientTape() as tape:
            tape.watch(x)
            h = x
            for layer in stack:
                h = layer(h)  # (1, T, width)
            last = tf.reduce_sum(h[0, -1])  # the last output position
        if tf.reduce_any(tape.gradient(last, x)[0, 0] != 0):
            return depth
    return None


path_rows = []
for T in (8, 32) if QUICK else (8, 32, 128):
    plain, dilated = layers_needed(T), layers_needed(T, dilated=True)
    assert plain == math.ceil((T - 1) / (KERNEL - 1))  # O(T/k), contiguous
    assert dilated == math.ceil(math.log(T, KERNEL) - 1e-9)  # O(log_k T)
    path_rows.append((T, plain, dilated, 1))
show_table(
    [
        "T",
        f"contiguous causal Conv1D layers, k={KERNEL}",
        "dilated Conv1D layers",
        "attention",
    ],
    path_rows,
)

# %% [markdown]
# A recurrent layer connects every pair too, but through $i - j$ recurrent
# steps; along that path the gradient is multiplied by
# $\partial h_{(t)} / \partial h_{(t-1)}$ once per step and tends to vanish
# (Eq. 7.4–7.13). The plot shows the size of
# $\partial h_{(T)} / \partial x_{(T-s)}$ against the distance $s$ for a
# freshly initialised `SimpleRNN` and for one self-attention layer (the
# gradient of the last output, averaged over a few random inputs).
#
# For attention, the fair comparison is among distances $s \ge 1$. Each of
# those inputs reaches the last output the same way, as a key and a value,
# so comparing them isolates the effect of distance. The input at $s = 0$
# is the output's own position: it also enters as the query
# $W_q x^{(T)}$ that scores every key, and its gradient is larger for that
# reason alone (the marked point of the plot). So the far end, $s = T - 1$,
# is set against $s = 1$, not $s = 0$; for the recurrent layer $s = 0$ is
# the first step of its path and the natural reference.

# %%
T, d = 64, 32
gradient_length = T
recurrent = keras.layers.SimpleRNN(d)  # returns h_(T)
attention = MultiHeadAttention(num_heads=HEADS, key_dim=d // HEADS)
x = tf.random.normal((16, T, d), seed=2)
with tf.GradientTape(persistent=True) as tape:
    tape.watch(x)
    h_last = recurrent(x)  # (B, d)
    a_last = attention(x, x)[:, -1]  # (B, d)
    rnn_output, attention_output = tf.reduce_sum(h_last), tf.reduce_sum(a_last)
rnn_grad = tf.norm(tape.gradient(rnn_output, x), axis=-1).numpy().mean(0)  # (T,)
att_grad = tf.norm(tape.gradient(attention_output, x), axis=-1).numpy().mean(0)
distance = np.arange(T)[::-1]  # s = T - 1 - t
# Index t is position t, at distance T - 1 - t from the last output.
own = att_grad[-1] / att_grad[:-1].max()  # s = 0 against the largest s >= 1

fig, ax = plt.subplots(figsize=(6, 4.2))
ax.semilogy(
    distance, rnn_grad, "-s", markersize=3, label="SimpleRNN: s recurrent steps"
)
ax.semilogy(
    distance[:-1], att_grad[:-1], "-o", markersize=3, label="self attention: 1 layer"
)
ax.semilogy(0, att_grad[-1], "o", markersize=8, mfc="none", color="tab:orange", mew=1.5)
ax.annotate(
    "s = 0: the output's own input, also its query, so larger",
    (0, att_grad[-1]),
    xytext=(6, 8 * att_grad[-1]),
    va="center",
    fontsize=8,
    arrowprops={"arrowstyle": "->", "lw": 0.8},
)
ax.set_ylim(top=60 * att_grad[-1])  # room for the note above the curves
ax.set_xlabel("distance s between output and input position")
ax.set_ylabel("mean gradient norm")
ax.set_title(f"Gradient of the last output w.r.t. earlier inputs (d = {d})")
ax.legend(loc="lower left")
fig.tight_layout()
if not QUICK:
    fig.savefig(os.path.join(IMAGES, "tutorial_08_path_length.png"), dpi=110)
plt.show()

decay = rnn_grad[0] / rnn_grad[-1]
flat = att_grad[0] / att_grad[-2]
spread = att_grad[:-1].max() / att_grad[:-1].min()
print(f"SimpleRNN: gradient at distance {T - 1} is {decay:.1e} of that at 0")
print(f"attention: gradient at distance {T - 1} is {flat:.2f} of that at distance 1")
print(f"attention: over s = 1..{T - 1} the largest is {spread:.1f}x the smallest")
print(f"attention: at s = 0 it is {own:.1f}x the largest at any s >= 1")
assert decay < 1e-3 < flat
half = T // 2
near, far = att_grad[T - half : -1].mean(), att_grad[: T - half].mean()
print(
    f"attention: mean over s = 1..{half - 1} / mean over s = {half}..{T - 1}: "
    f"{near / far:.2f}"
)
assert spread < 10 and own > 2 and 0.5 < near / far < 2 and decay < 1e-6

# %% [markdown]
# Over 63 steps the recurrent layer's gradient falls by more than six orders
# of magnitude at this initialisation. The attention layer's gradient at
# distance 63 is of the same order as at distance 1; across all distances
# $s \ge 1$ it varies by less than a factor of 10 and without a trend (the
# mean over the nearer half of the distances is within a factor of 2 of the
# mean over the farther half). Only its own position, $s = 0$, stands out,
# by more than a factor of 2, for the query reason above.

# %% [markdown]
# ## The table, with our numbers
#
# The counted columns of the lecture's table, next to the time measured at
# $T = d = 128$. The convolution's path length is given for both stacks of
# the path-length section: contiguous kernels ($\lceil 127/2 \rceil = 64$
# layers) and dilated ones ($\lceil \log_3 128 \rceil = 5$ layers).

# %%
T = d = FIXED_D
measured = time_layers(T, d)
contiguous_layers = math.ceil((T - 1) / (KERNEL - 1))
dilated_layers = math.ceil(math.log(T, KERNEL) - 1e-9)
assert (contiguous_layers, dilated_layers) == (64, 5)
for row in path_rows:  # the stacks measured with gradients, same formulas
    if row[0] == T:
        assert row[1:3] == (contiguous_layers, dilated_layers)
show_table(
    [
        "layer",
        "parameters",
        f"multiply-adds (T = d = {d})",
        "sequential steps",
        "path length",
        "measured ms",
    ],
    [
        (
            "self attention",
            f"{expected['self attention'](d):,}",
            f"{attention_layer_macs(T, d):,}",
            "1",
            "1",
            f"{1e3 * measured['self attention']:.2f}",
        ),
        (
            "SimpleRNN",
            f"{expected['SimpleRNN'](d):,}",
            f"{recurrent_macs(T, d):,}",
            f"{T}",
            f"{T}",
            f"{1e3 * measured['SimpleRNN']:.2f}",
        ),
        (
            f"Conv1D, k = {KERNEL}",
            f"{expected['Conv1D'](d):,}",
            f"{convolution_macs(T, d):,}",
            "1",
            f"{contiguous_layers} contiguous, {dilated_layers} dilated layers",
            f"{1e3 * measured['Conv1D']:.2f}",
        ),
    ],
)

# %% [markdown]
# **What to take away.** Counted in operations, the attention lookup beats
# the recurrence only while $T < d$, and a whole attention layer, with its
# four projections, never does fewer operations than a recurrent layer of
# the same width (both asserted on the grid of the counting section). Its
# $T^2$ term takes over from the projections once $T$ exceeds $2d$. On the
# clock attention fares better than its count, because its work is a few
# large products that run at once instead of $T$ small ones in a row (the
# achieved rates above), and it connects every pair of positions in one
# layer, where the recurrence's gradients fade with distance. What this run
# measured:


# %%
def arithmetic_ratio(T, d=FIXED_D):
    """Multiply-adds of the attention layer over those of the recurrent one."""
    return attention_layer_macs(T, d) / recurrent_macs(T, d)  # 2 + T / d


if CHECK_TIMES:  # better than its count: time ratio below the arithmetic one
    time_ratio = measured["self attention"] / measured["SimpleRNN"]  # T = d
    assert time_ratio < arithmetic_ratio(FIXED_D), time_ratio

if layer_vs_rnn is None:
    clock = f"the attention layer {describe(None, 'self attention')}, at d = {FIXED_D}"
else:
    assert arithmetic_ratio(layer_vs_rnn) > 2
    clock = (
        f"the attention layer kept pace with SimpleRNN up to T ≈ "
        f"{layer_vs_rnn:.0f} at d = {FIXED_D}, although at that length it does "
        f"{arithmetic_ratio(layer_vs_rnn):.1f} times the multiply-adds"
    )
display(
    Markdown(
        f"In this run {clock}; the recurrent layer reached "
        f"{rate['SimpleRNN']:.1f} GFLOP/s against {rate['self attention']:.1f} "
        f"for the attention layer at T = {largest}; and the SimpleRNN's "
        f"gradient at distance {gradient_length - 1} was {decay:.0e} of its "
        f"value at distance 0, while attention's was {flat:.2f} of its value "
        f"at distance 1."
    )
)
