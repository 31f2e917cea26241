"""Walking a list endpoint page by page: ``ListWalk``, the iterator every list of the client
returns, which drops repeated ids and checks what it saw against the API's ``totalCount``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Generic, Protocol, TypeVar

from retention.api.answers import Decoder
from retention.api.endpoints import Endpoint
from retention.core.wording import counted
from retention.errors import InconsistentListError, MalformedResponseError, RequestInfo


class _HasId(Protocol):
    @property
    def id(self) -> str: ...


ItemT = TypeVar("ItemT", bound=_HasId)
ItemT_co = TypeVar("ItemT_co", bound=_HasId, covariant=True)


class Page(Protocol[ItemT_co]):
    """A page of a list: pydantic's ListPage, or msgspec's WalkedPage."""

    @property
    def results(self) -> Sequence[ItemT_co]: ...

    @property
    def total_count(self) -> int | None: ...


class Pager(Protocol):
    """What a walk asks of the client (OpsManagerClient is one): a page, and the URL to
    name in an error."""

    @property
    def items_per_page(self) -> int: ...

    def get_page(
        self,
        endpoint: Endpoint,
        ids: tuple[str, ...],
        params: Mapping[str, str | int],
        adapter: Decoder[Page[ItemT]],
    ) -> Page[ItemT]: ...

    def url_for(self, endpoint: Endpoint, ids: tuple[str, ...]) -> str: ...


class ListWalk(Generic[ItemT]):
    """Iterates over every item of a list endpoint, page by page, each id once.

    After the iteration ends, ``total_count`` is the API's count, ``pages`` the number of
    pages read and ``duplicates`` how many repeated ids were dropped. If the number of unique
    items differs from ``totalCount``, or ``totalCount`` changed between pages, the iteration
    raises InconsistentListError at its end, so a consumer that reads to the end knows it
    saw the whole list as it stood.
    """

    def __init__(
        self,
        client: Pager,
        endpoint: Endpoint,
        ids: tuple[str, ...],
        adapter: Decoder[Page[ItemT]],
        params: Mapping[str, str | int] | None = None,
    ) -> None:
        self._client = client
        self.endpoint = endpoint
        self._ids = ids
        self._adapter = adapter
        self._params = dict(params or {})
        self.total_count: int | None = None
        self.pages = 0
        self.duplicates = 0
        self.seen = 0

    def __iter__(self) -> Iterator[ItemT]:
        per_page = self._client.items_per_page
        seen_ids: set[str] = set()
        page_num = 1
        page_limit: int | None = None
        totals: list[int] = []
        while True:
            params = {**self._params, "pageNum": page_num, "itemsPerPage": per_page}
            page = self._client.get_page(self.endpoint, self._ids, params, self._adapter)
            self.pages += 1
            if page.total_count is None:
                raise MalformedResponseError(
                    "list answer has no totalCount, so its completeness cannot be checked",
                    endpoint=str(self.endpoint),
                )
            self.total_count = page.total_count
            if not totals or totals[-1] != page.total_count:
                totals.append(page.total_count)
            for item in page.results:
                if item.id in seen_ids:
                    self.duplicates += 1
                    continue
                seen_ids.add(item.id)
                yield item
            self.seen = len(seen_ids)  # once a page: the walk's hot loop stays bare
            if len(page.results) < per_page or page_num * per_page >= page.total_count:
                break
            if page_limit is None:
                # Some slack for items created while we walk; beyond it the server is looping.
                page_limit = page.total_count // per_page + 100
            page_num += 1
            if page_num > page_limit:
                raise self._inconsistent(
                    f"still full pages at page {page_num} though totalCount is "
                    f"{page.total_count}; stopped",
                    seen=len(seen_ids),
                )
        # A list that changed while we read it may have shifted an item past us even when
        # the counts agree at the end (one reaped behind us, one skipped ahead), so a
        # changing totalCount alone makes the walk inconsistent.
        if len(seen_ids) != self.total_count or len(totals) > 1:
            changed = (
                f"; totalCount changed during the walk ({' -> '.join(map(str, totals))})"
                if len(totals) > 1
                else ""
            )
            raise self._inconsistent(
                f"saw {counted(len(seen_ids), 'unique item')} but totalCount is "
                f"{self.total_count} ({counted(self.pages, 'page')}, "
                f"{counted(self.duplicates, 'repeated id')} dropped){changed}",
                seen=len(seen_ids),
            )

    def _inconsistent(self, message: str, *, seen: int) -> InconsistentListError:
        return InconsistentListError(
            message,
            endpoint=str(self.endpoint),
            expected=self.total_count or 0,
            seen=seen,
            request=RequestInfo(
                self.endpoint.method, self._client.url_for(self.endpoint, self._ids)
            ),
        )

    def collect(self) -> list[ItemT]:
        """Read the whole list (checked against totalCount) into a list."""
        return list(self)
