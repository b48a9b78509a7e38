"""What a compiled decoding loop asks of the host, read from JAX and XLA.

XLA:GPU runs a `while` loop whose trip count it knows without reading
anything back; any other loop copies its predicate to the host and waits
for it at every iteration. XLA:CPU annotates the same analysis on its
compiled program (`known_trip_count`), so the CPU can check what a GPU
would have to wait for.
"""

import re

_TRIP_COUNT = re.compile(r'"known_trip_count":\{"n":"(\d+)"\}')


def compiled_trip_counts(fn, *args):
    """The trip count XLA knows of each `while` of `jax.jit(fn)`, or None."""
    import jax  # The JAX backend only.

    text = jax.jit(fn).lower(*args).compile().as_text()
    counts = []
    for line in text.splitlines():
        if " while(" in line:
            found = _TRIP_COUNT.search(line)
            counts.append(int(found.group(1)) if found else None)
    return counts


def host_callbacks(fn, *args):
    """Names of the host callbacks anywhere in `fn`'s jaxpr."""
    import jax  # The JAX backend only.

    found = []

    def visit(jaxpr):
        for eqn in jaxpr.eqns:
            if "callback" in eqn.primitive.name:
                found.append(eqn.primitive.name)
            for value in eqn.params.values():
                for sub in value if isinstance(value, (tuple, list)) else (value,):
                    sub = getattr(sub, "jaxpr", sub)  # a ClosedJaxpr's Jaxpr
                    if hasattr(sub, "eqns"):
                        visit(sub)

    visit(jax.make_jaxpr(fn)(*args).jaxpr)
    return found
