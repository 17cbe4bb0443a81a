"""Completed answers of list items, reused while the stored fields they came from are unchanged.

A page of finished episodes with their turns is thousands of fields for graphql-core to resolve
and complete one by one, although the same episodes come back the same each time. A list query
hands each record over with `version`, a digest of the stored JSON of exactly the fields it
fetched (resolvers/search.py). The completed answer of such an object is kept under that digest
and the selection's shape, so a record changed in any way (by Parley or another writer), or
deleted and written again, has a new digest and is completed afresh: nothing is invalidated,
because nothing stale can match.

Only selections that read nothing but the record itself are kept: no field of a type that is
read from other records (an episode's agents, say), no directives, no arguments, nothing
deferred, and no answer that raised a field error.
"""

from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any
from weakref import WeakKeyDictionary

from graphql import (
    FieldNode,
    FragmentSpreadNode,
    GraphQLObjectType,
    InlineFragmentNode,
    SelectionNode,
    get_named_type,
    print_ast,
)
from graphql.execution.collect_fields import FieldDetails

from parley.graph.encoding import Encoded

Key = tuple[str, bytes]
Printed = WeakKeyDictionary[FieldNode, tuple[tuple[int, ...], str | None]]
"""Shapes already worked out, by the first field node of a selection (the parsed documents
are cached, so the same nodes come back request after request): the ids of all its nodes, and
the shape. An entry goes with its document."""


class AnswerCache:
    """A bounded LRU of completed answers."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._answers: OrderedDict[Key, Encoded] = OrderedDict()

    def get(self, key: Key) -> Encoded | None:
        answer = self._answers.get(key)
        if answer is not None:
            self._answers.move_to_end(key)
        return answer

    def put(self, key: Key, answer: Encoded) -> None:
        self._answers[key] = answer
        self._answers.move_to_end(key)
        while len(self._answers) > self.size:
            self._answers.popitem(last=False)

    def __len__(self) -> int:
        return len(self._answers)


class Shapes:
    """The cache key of a selection on one type: its printed form, with the fragments it spreads;
    None when its answer may depend on more than the record."""

    def __init__(
        self,
        own_types: Mapping[str, Collection[str]],
        fragments: Mapping[str, Any],
        printed: Printed,
    ) -> None:
        self.own_types = own_types
        self.fragments = fragments
        self.printed = printed
        self._known: dict[int, str | None] = {}
        self._held: list[object] = []  # keeps the keyed lists alive, so their ids stay unique

    def of(self, return_type: GraphQLObjectType, details: list[FieldDetails]) -> str | None:
        known = self._known.get(id(details), ...)
        if known is ...:
            known = self._remembered(return_type, details)
            self._known[id(details)] = known
            self._held.append(details)
        return known

    def _remembered(
        self, return_type: GraphQLObjectType, details: list[FieldDetails]
    ) -> str | None:
        ids = tuple(id(d.node) for d in details)
        seen = self.printed.get(details[0].node)
        if seen is not None and seen[0] == ids:
            return seen[1]
        shape = self._shape(return_type, details)
        self.printed[details[0].node] = (ids, shape)
        return shape

    def _shape(self, return_type: GraphQLObjectType, details: list[FieldDetails]) -> str | None:
        allowed = self.own_types.get(return_type.name)
        if allowed is None:
            return None
        if any(d.defer_usage is not None or d.fragment_variable_values for d in details):
            return None
        spread: dict[str, str] = {}
        for d in details:
            if d.node.selection_set is None:
                return None
            selections = d.node.selection_set.selections
            if not self._own(return_type, selections, allowed, spread):
                return None
        printed = [print_ast(d.node) for d in details]
        return "\n".join([return_type.name, *printed, *(spread[name] for name in sorted(spread))])

    def _own(
        self,
        parent: GraphQLObjectType,
        selections: Iterable[SelectionNode],
        allowed: Collection[str],
        spread: dict[str, str],
    ) -> bool:
        for selection in selections:
            if selection.directives:
                return False
            if isinstance(selection, FieldNode):
                if selection.arguments:
                    return False
                name = selection.name.value
                if name == "__typename":
                    continue
                field = parent.fields.get(name)
                if field is None:
                    return False
                named = get_named_type(field.type)
                if isinstance(named, GraphQLObjectType):
                    if named.name not in allowed or selection.selection_set is None:
                        return False
                    if not self._own(named, selection.selection_set.selections, allowed, spread):
                        return False
            elif isinstance(selection, InlineFragmentNode):
                condition = selection.type_condition
                if condition is not None and condition.name.value != parent.name:
                    return False
                if not self._own(parent, selection.selection_set.selections, allowed, spread):
                    return False
            elif isinstance(selection, FragmentSpreadNode):
                fragment = self.fragments.get(selection.name.value)
                if fragment is None or fragment.variable_signatures:
                    return False
                definition = fragment.definition
                if definition.type_condition.name.value != parent.name:
                    return False
                spread[selection.name.value] = print_ast(definition)
                if not self._own(parent, definition.selection_set.selections, allowed, spread):
                    return False
            else:
                return False
        return True


def kept_answers(
    cache: AnswerCache,
    shapes: Shapes,
    item_type: GraphQLObjectType,
    details: list[FieldDetails],
    items: Sequence[Any],
) -> list[Encoded] | None:
    """The kept answers of every item of a list, or None unless all are kept (then the list is
    completed item by item, as usual). A page of 50 reused items costs 50 look-ups instead of
    graphql-core's walk over each of them."""
    if any(d.node.directives for d in details):
        return None  # @stream and the like change how a list is completed
    shape = shapes.of(item_type, details)
    if shape is None:
        return None
    answers: list[Encoded] = []
    for item in items:
        version = getattr(item, "version", None)
        answer = cache.get((shape, version)) if isinstance(version, bytes) else None
        if answer is None:
            return None
        answers.append(answer)
    return answers


def cached_completion(
    cache: AnswerCache,
    shapes: Shapes,
    errors: list[Any],
    return_type: GraphQLObjectType,
    details: list[FieldDetails],
    result: Any,
    complete: Callable[[], Any],
) -> Any:
    """The cached answer for `result`, or `complete()`'s, kept when it completed at once and
    without a field error. A kept answer carries its JSON text (graph/encoding.py), so that a
    response holding it splices the text in instead of encoding it again."""
    version = getattr(result, "version", None)
    if not isinstance(version, bytes):
        return complete()
    shape = shapes.of(return_type, details)
    if shape is None:
        return complete()
    key = (shape, version)
    answer = cache.get(key)
    if answer is not None:
        return answer
    before = len(errors)
    answer = complete()
    if isinstance(answer, dict) and len(errors) == before:
        answer = Encoded(answer)
        cache.put(key, answer)
    return answer
