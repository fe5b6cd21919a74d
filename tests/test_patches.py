"""``fuzz.common.patches``: a unified diff read as hostile input and applied inside one directory, nothing else touched.

What ``judge-fix`` applies a pull request's patch with: a hunk at its line or the nearest offset, files created and
deleted, a file outside the copied part listed, not applied; every refusal one line (``BadInput``) before any file
is written; nothing written through a link, outside the root, or into a hard-linked original.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fuzz.common import patches
from fuzz.common.errors import BadInput
from fuzz.common.patches import apply, parse_patch, read_patch

KEEP = "python/sglang/"
FILE = "python/sglang/srt/x.py"


def tree(root: Path, text: str = "a\nb\nc\nd\ne\n") -> Path:
    path = root / FILE
    path.parent.mkdir(parents=True)
    path.write_text(text)
    return path


def diff(path: str, body: str, old: str | None = None) -> str:
    return f"diff --git a/{path} b/{path}\nindex 1..2 100644\n--- {old or 'a/' + path}\n+++ b/{path}\n{body}"


def test_a_hunk_applies_at_its_line_or_the_nearest_offset(tmp_path: Path) -> None:
    path = tree(tmp_path, "x\ny\nz\na\nb\nc\nd\ne\n")
    text = "From: someone\nSubject: a preamble is not the patch\n\n" + diff(FILE, "@@ -2,3 +2,3 @@\n b\n-c\n+C\n d\n")
    done = apply(parse_patch(text), str(tmp_path), KEEP)
    assert path.read_text() == "x\ny\nz\na\nb\nC\nd\ne\n" and done.changed == (FILE,)


def test_a_missing_newline_at_the_end_created_and_deleted_files(tmp_path: Path) -> None:
    path = tree(tmp_path, "a\nb")
    gone = tmp_path / "python/sglang/old.py"
    gone.write_text("x\n")
    text = (
        diff(FILE, "@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+B\n")
        + diff("python/sglang/new.py", "@@ -0,0 +1,2 @@\n+n\n+m\n", old="/dev/null")
        + "--- a/python/sglang/old.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n"
    )
    apply(parse_patch(text), str(tmp_path), KEEP)
    assert path.read_text() == "a\nB\n" and (tmp_path / "python/sglang/new.py").read_text() == "n\nm\n"
    assert not gone.exists()


def test_a_file_outside_the_copied_part_is_listed_not_applied(tmp_path: Path) -> None:
    tree(tmp_path)
    text = diff("test/registered/test_x.py", "@@ -0,0 +1 @@\n+t\n", old="/dev/null")
    text += diff(FILE, "@@ -1 +1 @@\n-a\n+A\n")
    done = apply(parse_patch(text), str(tmp_path), KEEP)
    assert done.outside == ("test/registered/test_x.py",) and not (tmp_path / "test").exists()


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (diff("python/sglang/../../escape.py", "@@ -0,0 +1 @@\n+x\n", old="/dev/null"), "not a relative path"),
        ("--- /etc/passwd\n+++ /etc/passwd\n@@ -1 +1 @@\n-a\n+b\n", "not a relative path"),
        ('--- "a/python/sglang/x y.py"\n+++ "b/python/sglang/x y.py"\n@@ -1 +1 @@\n-a\n+b\n', "a quoted path"),
        ("--- /dev/null\n+++ /dev/null\n@@ -0,0 +1 @@\n+x\n", "both sides are /dev/null"),
        ("diff --git a/x b/y\nrename from x\nrename to y\n", "a rename, copy or binary patch"),
        ("Binary files a/x.so and b/x.so differ\n", "a rename, copy or binary patch"),
        (diff(FILE, "@@ -1,2 +1,2 @@\n-a\n+A\n"), "the hunk ends before"),
        (diff(FILE, "@@ -1 +1 @@\n*a\n+A\n"), "not a line of a hunk"),
        (diff(FILE, "@@ -1 +1 @@\n-a\n+A\n") + diff(FILE, "@@ -2 +2 @@\n-b\n+B\n"), "twice"),
        ("--- a/python/sglang/x.py\n+++ b/python/sglang/y.py\n@@ -1 +1 @@\n-a\n+b\n", "renamed"),
        ("nothing here\n", "holds no unified diff"),
        (diff(FILE, "@@ -1 +1 @@\n-no such line\n+A\n"), "hunk 1 of python/sglang/srt/x.py does not apply"),
        (diff("python/sglang/absent.py", "@@ -1 +1 @@\n-a\n+A\n"), "which the tree does not have"),
        (diff(FILE, "@@ -0,0 +1 @@\n+x\n", old="/dev/null"), "which the tree already has"),
    ],
)
def test_a_patch_it_cannot_apply_is_one_line_and_nothing_is_written(text: str, said: str, tmp_path: Path) -> None:
    path = tree(tmp_path)
    first = diff("python/sglang/first.py", "@@ -0,0 +1 @@\n+f\n", old="/dev/null")  # applies: still not written
    with pytest.raises(BadInput) as e:
        apply(parse_patch(text if "no unified diff" in said else first + text), str(tmp_path), KEEP)
    assert said in str(e.value) and "\n" not in str(e.value)
    assert path.read_text() == "a\nb\nc\nd\ne\n" and not (tmp_path / "python/sglang/first.py").exists()
    assert not (tmp_path.parent / "escape.py").exists()


def test_a_link_on_the_way_is_refused(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "python").mkdir(parents=True)
    outside.mkdir()
    (outside / "x.py").write_text("a\n")
    os.symlink(outside, root / "python" / "sglang")
    with pytest.raises(BadInput, match="symbolic link"):
        apply(parse_patch(diff("python/sglang/x.py", "@@ -1 +1 @@\n-a\n+A\n")), str(root), KEEP)
    assert (outside / "x.py").read_text() == "a\n"


def test_a_hard_linked_original_is_replaced_never_written_through(tmp_path: Path) -> None:
    original = tmp_path / "checkout.py"
    original.write_text("a\n")
    (tmp_path / "copy/python/sglang").mkdir(parents=True)
    os.link(original, tmp_path / "copy/python/sglang/x.py")
    apply(parse_patch(diff("python/sglang/x.py", "@@ -1 +1 @@\n-a\n+A\n")), str(tmp_path / "copy"), KEEP)
    assert original.read_text() == "a\n" and (tmp_path / "copy/python/sglang/x.py").read_text() == "A\n"


def test_a_patch_file_past_its_bound_or_not_utf8_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    big, binary = tmp_path / "big.patch", tmp_path / "bin.patch"
    big.write_text(diff(FILE, "@@ -1 +1 @@\n-a\n+A\n"))
    binary.write_bytes(b"--- a/x\n+++ b/x\n\xff\xfe\n")
    monkeypatch.setattr(patches, "MAX_PATCH_BYTES", 40)
    with pytest.raises(BadInput, match="larger than"):
        read_patch(str(big))
    with pytest.raises(BadInput, match="not UTF-8"):
        read_patch(str(binary))
    with pytest.raises(BadInput, match="not a regular file"):
        read_patch(str(tmp_path))
