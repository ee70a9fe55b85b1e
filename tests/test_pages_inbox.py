"""The inbox: the person's answerable pauses, newest first, a keyset page at a time, in at most three
queries (the session, the user, the page) whatever their number."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.pages_support import PAGES, client_for, openai_approval, pause_url
from tests.pause_helpers import age, answered, expire, mint
from turnstate_app.models import Pause
from turnstate_app.pages.inbox import PAGE_SIZE

pytestmark = pytest.mark.django_db


def listed(html: str) -> list[str]:
    """The jtis the inbox lists, in its order."""
    return re.findall(r'<a class="ts-title" href="/answers/([^/]+)/">', html)


def titles(html: str) -> list[str]:
    return re.findall(r'<a class="ts-title" href="[^"]+">(.*?)</a>', html)


def older_link(html: str) -> str | None:
    found = re.search(r'<a rel="next" href="([^"]+)">', html)
    return found.group(1).replace("&amp;", "&") if found else None


def test_a_person_sees_their_own_answerable_pauses_newest_first(users: dict[str, Any]) -> None:
    older = mint(owner=users["owner"], request={"question": "First?"})
    newer = mint(owner=users["owner"], request={"question": "Second?\nMore words."})
    mint(owner=users["other"])
    answered(owner=users["owner"])
    expire(mint(owner=users["owner"]), days=1)
    past_its_age = mint(owner=users["owner"])
    age(past_its_age, days=1)  # still marked pending, but no longer answerable
    assert Pause.objects.get(jti=past_its_age.claims.jti).status == "pending"
    html = client_for(users["owner"]).get(PAGES).content.decode()
    assert listed(html) == [newer.claims.jti, older.claims.jti]
    assert titles(html) == ["Second?", "First?"]


def test_an_approval_is_titled_by_its_tool_and_shows_its_agent_age_and_expiry(users: dict[str, Any]) -> None:
    openai_approval(owner=users["owner"])
    html = client_for(users["owner"]).get(PAGES).content.decode()
    assert titles(html) == ["refund"]
    assert "<dd>payments</dd>" in html
    assert re.search(r"<dt>Asked</dt><dd><time [^>]+>0\xa0minutes ago</time>", html)
    assert re.search(r"<dt>Expires</dt><dd><time [^>]+>in 6\xa0days, 23\xa0hours</time>", html)


def test_html_in_a_title_is_shown_as_text(users: dict[str, Any]) -> None:
    mint(owner=users["owner"], request={"question": "<script>alert(1)</script>"})
    html = client_for(users["owner"]).get(PAGES).content.decode()
    assert "<script" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_staff_see_everyones_pauses_and_filter_by_owner(users: dict[str, Any]) -> None:
    mine, theirs = mint(owner=users["owner"]), mint(owner=users["other"])
    staff = client_for(users["staff"])
    assert set(listed(staff.get(PAGES).content.decode())) == {mine.claims.jti, theirs.claims.jti}
    assert listed(staff.get(f"{PAGES}?owner={users['other'].pk}").content.decode()) == [theirs.claims.jti]
    not_staff = client_for(users["owner"]).get(f"{PAGES}?owner={users['other'].pk}")
    assert listed(not_staff.content.decode()) == [mine.claims.jti]


@pytest.mark.parametrize(
    "query", ["?owner=someone", "?owner=-1", "?after=yesterday", "?after=2026-01-01T00:00:00~x"]
)
def test_a_bad_owner_or_cursor_is_a_400_page_in_words(users: dict[str, Any], query: str) -> None:
    response = client_for(users["staff"]).get(PAGES + query)
    assert response.status_code == 400
    assert "This page address is not valid" in response.content.decode()


def test_an_empty_inbox_says_so_in_words(users: dict[str, Any]) -> None:
    expire(mint(owner=users["owner"]), days=1)
    html = client_for(users["owner"]).get(PAGES).content.decode()
    assert listed(html) == []
    assert "Nothing is waiting for your answer" in html and "expired" in html


def test_pages_follow_one_another_without_gaps_or_repeats(users: dict[str, Any]) -> None:
    minted = [mint(owner=users["owner"]) for _ in range(PAGE_SIZE + 5)]
    client = client_for(users["owner"])
    first = client.get(PAGES).content.decode()
    link = older_link(first)
    assert link is not None
    second = client.get(PAGES + link).content.decode()
    assert older_link(second) is None
    assert listed(first) + listed(second) == [m.claims.jti for m in reversed(minted)]
    assert len(listed(first)) == PAGE_SIZE


def test_each_row_links_to_its_pause(users: dict[str, Any]) -> None:
    minted = mint(owner=users["owner"])
    html = client_for(users["owner"]).get(PAGES).content.decode()
    assert f'href="{pause_url(minted.claims.jti)}"' in html


@pytest.mark.parametrize("count", [1, 30])
def test_the_inbox_costs_three_queries_whatever_the_number_of_pauses(
    users: dict[str, Any], count: int, django_assert_max_num_queries: Any
) -> None:
    for _ in range(count):
        mint(owner=users["owner"], request={"question": "Which date?"})
    for who in ("owner", "staff"):
        client = client_for(users[who])
        with django_assert_max_num_queries(3):
            response = client.get(PAGES)
        assert len(listed(response.content.decode())) == min(count, PAGE_SIZE)
        assert response["Referrer-Policy"] == "no-referrer"
