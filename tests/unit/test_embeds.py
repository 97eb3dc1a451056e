"""What `![[note#part]]` shows in read_note: Obsidian's headings and blocks, Dendron's ranges."""

from __future__ import annotations

from k0maru_gateway._embeds import anchor_key, embedded_part

NOTE = """---
id: abc
title: Part
---
# Part

Intro line.

## Summary

Exports are serialised with an flock.

### Why

Two exports wrote one file.

```md
## Not a heading
```

## Details

The lock is on the export folder. ^lock-rule

- first item
- second item ^item-two

## Last

The end.
"""


def test_a_heading_shows_its_section_and_dendrons_ranges_are_followed():
    assert anchor_key("How is Dendron different from X note-taking tool?") == anchor_key(
        "how-is-dendron-different-from-x-note-taking-tool"
    )
    assert anchor_key("0.52") == anchor_key("052")  # Dendron's slug of `## 0.52`
    summary = embedded_part(NOTE, "summary")
    assert summary is not None
    assert summary.startswith("## Summary") and "### Why" in summary and "## Not a heading" in summary
    assert "## Details" not in summary  # up to the next heading of its level
    assert embedded_part(NOTE, "Summary") == summary  # Obsidian writes the heading itself
    assert embedded_part(NOTE, "summary,1") == summary.removeprefix("## Summary").strip()  # without its line
    to_end = embedded_part(NOTE, "details,1:#*")
    assert to_end is not None and to_end.startswith("The lock") and to_end.endswith("The end.")
    assert embedded_part(NOTE, "summary:#last") == NOTE[NOTE.index("## Summary") : NOTE.index("## Last")].strip()
    assert embedded_part(NOTE, "not-a-heading") is None  # inside a code fence
    assert embedded_part(NOTE, "nowhere") is None


def test_a_block_shows_its_paragraph_or_list_item_and_no_heading_the_whole_note():
    assert embedded_part(NOTE, block="lock-rule") == "The lock is on the export folder."
    assert embedded_part(NOTE, block="item-two") == "- second item"
    assert embedded_part(NOTE, block="gone") is None
    whole = embedded_part(NOTE)
    assert whole is not None and whole.startswith("# Part") and "id: abc" not in whole  # no frontmatter
