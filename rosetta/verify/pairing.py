"""Inputs and outputs paired across two models: a port written by hand renames its tensors, goes NCHW <-> NHWC
(and back for feature maps), and feeds int32 tokens where the original took int64; none of that makes it another
function. A pairing is found wherever it is unique:

1. pairs the user gave (`--pair REF=OTHER[:PERMUTATION]`, API `pair={"image": "input_1"}`);
2. equal names, where the shapes fit as they are or through one layout permutation;
3. the rest by position and shape: each reference tensor with the other model's tensor whose shape equals it up
   to one of the layout permutations (none; channels first -> last, NCHW -> NHWC, NCW -> NWC, NCDHW -> NDHWC;
   last -> first), integer dtypes converted where the values fit.

Where more than one pairing fits (C = H = W, two inputs of one shape), rosetta refuses in one line that lists the
candidates and names --pair; it never picks one silently. The pairing used is said in every row."""

from __future__ import annotations

import itertools
from dataclasses import asdict, dataclass

import numpy as np

from rosetta.errors import BadInput

PAIR_HELP = "pair=REFERENCE_NAME=OTHER_NAME[:PERMUTATION] (e.g. pair=image=input_1:0,2,3,1)"


@dataclass(frozen=True)
class Pair:
    reference: str
    other: str
    permutation: tuple[int, ...] | None = None  # other's axes from the reference's: other = reference.transpose(p)
    dtype: str = ""  # the other's dtype where it differs (an integer width)
    how: str = ""  # "given", "name", "position"

    def describe(self, reference_shape=None, other_shape=None) -> str:
        shapes = (f" {_shape(reference_shape)}", f" {_shape(other_shape)}") if reference_shape is not None else ("", "")
        text = f"{self.reference}{shapes[0]} -> {self.other}{shapes[1]}"
        if self.permutation:
            text += f", transposed {','.join(map(str, self.permutation))}"
        if self.dtype:
            text += f", as {self.dtype}"
        return text

    def to_other(self, value: np.ndarray) -> np.ndarray:
        value = np.transpose(value, self.permutation) if self.permutation else value
        if self.dtype and value.dtype != np.dtype(self.dtype):
            cast = value.astype(self.dtype)
            if not np.array_equal(cast, value):
                raise BadInput(f"{self.reference}: its values do not fit {self.dtype} ({self.other}); give inputs "
                               "in that range")
            value = cast
        return np.ascontiguousarray(value)

    def to_reference(self, value: np.ndarray) -> np.ndarray:
        return np.transpose(value, np.argsort(self.permutation)) if self.permutation else value


def _shape(shape) -> str:
    return "(" + ",".join("N" if i == 0 else ("?" if d is None else str(d)) for i, d in enumerate(shape)) + ")"


def layout_permutations(rank: int) -> list[tuple[int, ...] | None]:
    """None (as it is), channels first -> last and last -> first, for tensors with a batch and a channel axis."""
    if rank < 3:
        return [None]
    to_last = (0, *range(2, rank), 1)
    to_first = (0, rank - 1, *range(1, rank - 1))
    return [None, to_last] + ([to_first] if to_first != to_last else [])


def fits(reference_shape, other_shape, permutation) -> bool:
    """Whether a tensor of `reference_shape` becomes one `other_shape` admits (None: any size) by `permutation`."""
    if len(reference_shape) != len(other_shape):
        return False
    moved = [reference_shape[axis] for axis in permutation] if permutation else list(reference_shape)
    return all(o is None or r is None or o == r for r, o in zip(moved, other_shape))


def dtype_fits(reference_dtype: str, other_dtype: str) -> str | None:
    """"" where the dtypes are one, the other's name where only an integer width differs, None where they clash."""
    a, b = np.dtype(reference_dtype), np.dtype(other_dtype)
    if a == b:
        return ""
    if a.kind in "iu" and b.kind in "iu":
        return b.name
    return None


def parse_pairs(texts) -> dict[str, tuple[str, tuple[int, ...] | None]]:
    """--pair REF=OTHER[:PERMUTATION] options as {reference name: (other name, permutation or None)}."""
    pairs = {}
    for text in texts or ():
        reference, equals, rest = text.partition("=")
        other, _, permutation = rest.partition(":")
        if not equals or not reference or not other:
            raise BadInput(f"pair={text!r}: expected {PAIR_HELP}")
        axes = None
        if permutation:
            try:
                axes = tuple(int(a) for a in permutation.split(","))
            except ValueError:
                raise BadInput(f"pair={text!r}: the permutation is axes like 0,2,3,1") from None
            if sorted(axes) != list(range(len(axes))):
                raise BadInput(f"pair={text!r}: {permutation} is not a permutation of 0..{len(axes) - 1}")
        if reference in pairs:
            raise BadInput(f"pair={reference} is given twice; pair each tensor once")
        pairs[reference] = (other, axes)
    return pairs


def pair_tensors(reference: list[tuple[str, tuple, str]], other: list[tuple[str, tuple, str]], given: dict,
                 kind: str, other_label: str) -> list[Pair]:
    """Pair every reference tensor (name, shape, dtype) with one of `other`'s; BadInput where none fits or more
    than one does (with the candidates and --pair). `given`: parse_pairs' pairs (names of either kind)."""
    others = {name: (shape, dtype) for name, shape, dtype in other}
    pairs: dict[str, Pair] = {}
    for name, shape, dtype in reference:
        if name in given:
            pairs[name] = _given_pair(name, shape, dtype, given[name], others, kind, other_label)
    for name, shape, dtype in reference:
        if name not in pairs and name in others and name not in {p.other for p in pairs.values()}:
            found = _candidates(shape, dtype, name, others[name])
            if any(permutation is None for permutation, _ in found):  # the same name, and it fits as it is
                found = [(None, cast) for permutation, cast in found if permutation is None]
            if len(found) == 1:
                pairs[name] = Pair(name, name, found[0][0], found[0][1], "name")
            elif len(found) > 1:
                raise BadInput(_ambiguous(kind, name, [Pair(name, name, p, c) for p, c in found], other_label))
    left = [(n, s, d) for n, s, d in reference if n not in pairs]
    free = [(n, s, d) for n, s, d in other if n not in {p.other for p in pairs.values()}]
    if not left:
        return [pairs[name] for name, _, _ in reference]
    options = {name: [Pair(name, o, p, c, "position") for o, os, od in free
                      for p, c in _candidates(shape, dtype, name, (os, od))] for name, shape, dtype in left}
    assignments = [choice for choice in itertools.product(*options.values())
                   if len({pair.other for pair in choice}) == len(choice)]
    if not assignments:
        name, shape, dtype = next((n, s, d) for n, s, d in left if not options[n]) if any(not o for o in options.values()) \
            else left[0]
        raise BadInput(f"{kind} {name} {_shape(shape)} {dtype}: {other_label} has no {kind} it fits (its {kind}s: "
                       f"{', '.join(f'{n} {_shape(s)} {d}' for n, s, d in free) or 'none left'}); pair them with "
                       f"{PAIR_HELP}")
    if len(assignments) > 1:
        if len(left) == len(free) and len(assignments) > 1:  # by position among the equally good
            positional = [c for c in assignments if [p.other for p in c] == [n for n, _, _ in free][:len(left)]]
            if len(positional) == 1 and all(len(options[n]) == 1 for n, _, _ in left):
                assignments = positional
        if len(assignments) > 1:
            name = next(n for n, _, _ in left if len({(p.other, p.permutation) for c in assignments for p in c
                                                      if p.reference == n}) > 1)
            candidates = sorted({p for c in assignments for p in c if p.reference == name}, key=str)
            raise BadInput(_ambiguous(kind, name, candidates, other_label))
    pairs.update({pair.reference: pair for pair in assignments[0]})
    return [pairs[name] for name, _, _ in reference]


def _given_pair(name: str, shape, dtype: str, given: tuple, others: dict, kind: str, other_label: str) -> Pair:
    """The pair `--pair NAME=OTHER[:PERMUTATION]` asks for, checked against both signatures: BadInput where the
    other model has no such tensor, or the permutation does not turn the one's shape into the other's."""
    other_name, permutation = given
    text = f"pair={name}={other_name}" + (f":{','.join(map(str, permutation))}" if permutation else "")
    if other_name not in others:
        raise BadInput(f"{text}: {other_label} has no {kind} {other_name!r}; its {kind}s: "
                       f"{', '.join(f'{n} {_shape(s)}' for n, (s, _) in others.items()) or 'none'}")
    other_shape, other_dtype = others[other_name]
    if permutation and len(permutation) != len(shape):
        raise BadInput(f"{text}: {name} has {len(shape)} axes, the permutation {len(permutation)}; give one axis "
                       "index for each")
    if not fits(shape, other_shape, permutation):
        how = " transposed" if permutation else ""
        raise BadInput(f"{text}: {name} {_shape(shape)}{how} does not fit {other_name} {_shape(other_shape)}; "
                       "give the permutation that makes the one the other (e.g. :0,2,3,1 for NCHW -> NHWC)")
    cast = dtype_fits(dtype, other_dtype)
    if cast is None:
        raise BadInput(f"{text}: {name} is {dtype}, {other_name} {other_dtype}; they cannot hold the same values")
    return Pair(name, other_name, permutation, cast, "given")


def pair_outputs(reference: list[tuple[str, tuple, str]], other: list[tuple[str, tuple, str]], given: dict,
                 other_label: str) -> tuple[list[Pair], list[str], list[str]]:
    """The reference's outputs paired with `other`'s from the two signatures, before any model runs, as
    pair_tensors pairs them: (the pairs, the reference's outputs `other` has none for, `other`'s outputs left
    over, which are not compared). Where `other` gives fewer outputs, each of its outputs is paired with one of
    the reference's (the rest are missing, and their rows FAIL); where that is not unique, BadInput."""
    if len(other) >= len(reference):
        pairs = pair_tensors(reference, other, given, "output", other_label)
        used = {pair.other for pair in pairs}
        return pairs, [], [name for name, _, _ in other if name not in used]
    names = {name for name, _, _ in other}
    backwards = {o: (r, _inverse(p)) for r, (o, p) in given.items() if o in names}
    try:
        found = pair_tensors(other, reference, backwards, "output", "the reference")
    except BadInput as error:
        raise BadInput(f"{other_label} gives {len(other)} output{'s' if len(other) > 1 else ''} and the reference "
                       f"{len(reference)}: {error}") from None
    pairs = [Pair(p.other, p.reference, _inverse(p.permutation), "", p.how) for p in found]
    paired = {pair.reference for pair in pairs}
    return ([next(p for p in pairs if p.reference == name) for name, _, _ in reference if name in paired],
            [name for name, _, _ in reference if name not in paired], [])


def _inverse(permutation: tuple[int, ...] | None) -> tuple[int, ...] | None:
    return tuple(int(axis) for axis in np.argsort(permutation)) if permutation else None


def _candidates(shape, dtype, name, other) -> list[tuple]:
    """(permutation, dtype cast) of each way a reference tensor fits one of the other model's."""
    other_shape, other_dtype = other
    cast = dtype_fits(dtype, other_dtype)
    if cast is None:
        return []
    loose = [p for p in layout_permutations(len(shape)) if fits(shape, other_shape, p)]
    # a free axis (a dynamic height, say) fits every layout: a permutation is only told apart by known sizes, and
    # where none tells it, the tensor is taken as it is
    exact = [p for p in loose if all(d is not None for d in other_shape[1:])]
    chosen = exact or ([None] if None in loose else loose)
    return [(p, cast) for p in chosen]


def _ambiguous(kind: str, name: str, candidates: list[Pair], other_label: str) -> str:
    listed = "; ".join(pair.describe() for pair in candidates)
    return (f"{kind} {name} pairs with {other_label} in more than one way ({listed}); say which with {PAIR_HELP}")


@dataclass
class Pairing:
    """The pairs of inputs and outputs between a reference and a model compared with it."""

    inputs: list[Pair]
    outputs: list[Pair]

    @property
    def identity(self) -> bool:
        return all(p.reference == p.other and not p.permutation and not p.dtype for p in self.inputs + self.outputs)

    def to_json(self) -> dict:
        return {"inputs": [asdict(p) for p in self.inputs], "outputs": [asdict(p) for p in self.outputs],
                "description": self.describe()}

    def describe(self) -> str:
        changed = [p.describe() for p in self.inputs + self.outputs
                   if p.reference != p.other or p.permutation or p.dtype]
        return "; ".join(changed) or "by name, as they are"

    @classmethod
    def from_json(cls, data: dict) -> "Pairing":
        def pair(entry):
            return Pair(**{**entry, "permutation": tuple(entry["permutation"]) if entry["permutation"] else None})
        return cls([pair(p) for p in data.get("inputs", [])], [pair(p) for p in data.get("outputs", [])])


def signature(entries: list[dict]) -> list[tuple[str, tuple, str]]:
    """Manifest entries ({name, shape, dtype}) as (name, shape with None for free axes, dtype)."""
    return [(e["name"], tuple(d if isinstance(d, int) and d > 0 else None for d in e["shape"]), e["dtype"])
            for e in entries]


def arrays_signature(arrays: dict[str, np.ndarray]) -> list[tuple[str, tuple, str]]:
    return [(name, tuple(np.shape(value)), np.asarray(value).dtype.name) for name, value in arrays.items()]


class PairedRunner:
    """A runner fed and read through a pairing: the reference's inputs renamed, transposed and cast for it, its
    outputs paired with the reference's (by name, else by position and shape) and put back in their layout."""

    def __init__(self, runner, inputs: list[Pair], reference_outputs: dict[str, np.ndarray], given: dict,
                 label: str, outputs: list[Pair] | None = None) -> None:
        self.runner, self.inputs, self.reference_outputs, self.given, self.label = \
            runner, inputs, reference_outputs, given, label
        self.paired_before = outputs  # the outputs' pairing from the signatures (None: left to the run's shapes)
        self.outputs: list[Pair] = list(outputs or [])

    def __getattr__(self, name: str):
        return getattr(self.runner, name)

    def predict(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        values = self.runner.predict({pair.other: pair.to_other(feeds[pair.reference]) for pair in self.inputs})
        if self.paired_before is not None and all(pair.other in values for pair in self.paired_before):
            return {pair.reference: pair.to_reference(values[pair.other]) for pair in self.paired_before}
        if set(values) == set(self.reference_outputs) and not self.given:
            self.outputs = [Pair(name, name, how="name") for name in self.reference_outputs]
            return values
        self.outputs = pair_tensors(arrays_signature(self.reference_outputs), arrays_signature(values), self.given,
                                    "output", self.label)
        return {pair.reference: pair.to_reference(values[pair.other]) for pair in self.outputs}

    @property
    def pairing(self) -> Pairing:
        return Pairing(self.inputs, self.outputs)
