"""The Markdown table writer, read back by a Markdown parser (markdown-it-py, the one MyST builds the docs with)."""

import pytest

from learner.tables import markdown_table


def test_a_pipe_inside_a_cell_stays_in_its_cell():
    markdown_it = pytest.importorskip("markdown_it", reason="markdown-it-py comes with the docs extra")
    table = markdown_table(["condition", "quantity"], [["theta_incoherence", "max |cos(Θi,Θj)|"], ["a", "b"]])
    tokens = markdown_it.MarkdownIt("commonmark").enable("table").parse(table)
    rows, row = [], None
    for tok in tokens:
        if tok.type == "tr_open":
            row = []
        elif tok.type == "inline" and row is not None:
            row.append(tok.children[0].content if len(tok.children) == 1 else
                       "".join(child.content for child in tok.children))
        elif tok.type == "tr_close":
            rows.append(row)
            row = None
    assert rows == [["condition", "quantity"], ["theta_incoherence", "max |cos(Θi,Θj)|"], ["a", "b"]]


def test_a_row_of_the_wrong_length_is_named():
    with pytest.raises(ValueError, match=r"row 1 has 1 cells, the header 2"):
        markdown_table(["a", "b"], [[1, 2], [3]])
