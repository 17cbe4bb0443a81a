"""Which fields of a stored record clients read and write, each with the limit its writes obey.

A field's type, default and description are declared once, on the record (storage/models.py);
`Exposed` adds the one line that makes it public and limits it. The validation models here and
the GraphQL types and inputs (graph/fields.py) are derived from both, so adding a public field
to a record is that field on the record and its line in the `Exposed` mapping.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, create_model
from pydantic.fields import FieldInfo

from parley.core.limits import RecordId


@dataclass(frozen=True)
class Exposed:
    record: type[BaseModel]
    limits: Mapping[str, Any]
    """Field name -> the annotated type its writes are validated with (core/limits.py)."""
    must_give: frozenset[str] = frozenset()
    """Fields a new record needs although the stored record has a default for them."""

    def __post_init__(self) -> None:
        unknown = (set(self.limits) | self.must_give) - set(self.record.model_fields)
        if unknown:
            raise ValueError(f"{self.record.__name__} has no fields {sorted(unknown)}")

    def info(self, name: str) -> FieldInfo:
        return self.record.model_fields[name]

    def annotation(self, name: str) -> Any:
        """The stored type of a field (what reads return)."""
        return self.info(name).annotation

    def description(self, name: str) -> str:
        described = self.info(name).description
        if not described:
            raise ValueError(f"{self.record.__name__}.{name} has no description")
        return described

    def required(self, name: str) -> bool:
        """Whether a new record must be given this field."""
        return self.info(name).is_required() or name in self.must_give

    def default(self, name: str) -> Any:
        return self.info(name).get_default(call_default_factory=True)

    def validator[M: BaseModel](self, model_name: str, base: type[M]) -> type[M]:
        """A pydantic model of the exposed fields with their limits and the record's defaults,
        on `base` (WriteModel, or a subclass adding fields or checks of its own)."""
        fields: dict[str, Any] = {
            name: (limit, ... if self.required(name) else self.default(name))
            for name, limit in self.limits.items()
        }
        return create_model(model_name, __base__=base, **fields)


class WriteModel(BaseModel):
    """Base of the validation models: a key the model does not know is an error."""

    model_config = ConfigDict(extra="forbid")


class WithId(WriteModel):
    """A new record, with the primary key a client may choose."""

    pk: RecordId | None = None
