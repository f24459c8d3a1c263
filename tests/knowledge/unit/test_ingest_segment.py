"""Unit tests for the deterministic guideline segmenter in knowledge.ingest."""

from __future__ import annotations

import dataclasses
import html
import re
import socket
from pathlib import Path

import pytest

from benchmarks.parsers import MARKUP_WORST
from clinical.vocab import UnitCancerType, UnitKind
from knowledge.ingest import (
    MAX_INPUT_BYTES,
    Candidate,
    Format,
    IngestError,
    fingerprint,
    segment_document,
)
from knowledge.ingest.rules import (
    find_native_grade,
    split_statements,
    suggest_cancer_type,
    suggest_kind,
)
from tests.linearity import assert_linear

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "ingest"
FIXTURE_FILES: list[tuple[str, Format]] = [
    ("hcc_guideline.md", "markdown"),
    ("lung_guideline.html", "html"),
    ("breast_guideline.txt", "text"),
]
MD_52 = "§ 5.2 Treatment of early-stage disease"
MD_TITLE = "Hepatocellular carcinoma: practice guideline (fictional test edition)"
_WORD = re.compile(r"\w+")


# --- helpers ------------------------------------------------------------------------------------


def load(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def segment_fixture(name: str, fmt: Format) -> list[Candidate]:
    return segment_document(load(name), fmt=fmt, source_key="test.fixture")


def by_anchor(candidates: list[Candidate]) -> dict[str, Candidate]:
    return {c.anchor: c for c in candidates}


def words_in_order(part: str, source: str) -> bool:
    """Whether every word of ``part`` occurs in ``source``, in the same order."""
    remaining = iter(_WORD.findall(source))
    return all(word in remaining for word in _WORD.findall(part))


def all_text(candidates: list[Candidate]) -> str:
    return "\n".join(c.text for c in candidates)


# --- anchors and heading paths ----------------------------------------------------------------


def test_segment_document_markdown_anchor_names_numbered_section_and_paragraph() -> None:
    # given
    candidates = segment_fixture("hcc_guideline.md", "markdown")

    # when
    first = by_anchor(candidates)[f"{MD_52} > ¶1"]

    # then
    assert first.heading_path == (MD_TITLE, "5 Treatment", "5.2 Treatment of early-stage disease")
    assert first.text == (
        "Liver resection is recommended for a single tumour in patients without clinically "
        "significant portal hypertension [I, A]."
    )
    assert first.source_key == "test.fixture"


def test_segment_document_markdown_anchors_in_document_order() -> None:
    # given
    candidates = segment_fixture("hcc_guideline.md", "markdown")

    # when
    anchors = [c.anchor for c in candidates]

    # then
    assert anchors == [
        "§ 1 Scope > ¶1",
        "§ 5.1 Staging > ¶1",
        f"{MD_52} > ¶1",
        f"{MD_52} > ¶2",
        f"{MD_52} > ¶3 s1",
        f"{MD_52} > ¶3 s2",
        f"{MD_52} > list 1 item 1",
        f"{MD_52} > list 1 item 2",
        f"{MD_52} > list 1 item 3",
        f"{MD_52} > table 1 row 1",
        f"{MD_52} > table 1 row 2",
        f"{MD_52} > ¶4",
    ]


def test_segment_document_unnumbered_headings_anchor_with_full_path() -> None:
    # given
    text = (
        "# Early breast cancer\n\n## Adjuvant therapy\n\nIntro text for the section.\n\n"
        "Endocrine therapy is recommended for hormone receptor-positive disease.\n"
    )

    # when
    candidates = segment_document(text, fmt="markdown", source_key="test.inline")

    # then
    assert [c.anchor for c in candidates] == [
        "§ Early breast cancer > Adjuvant therapy > ¶1",
        "§ Early breast cancer > Adjuvant therapy > ¶2",
    ]
    assert candidates[1].heading_path == ("Early breast cancer", "Adjuvant therapy")


def test_segment_document_text_before_any_heading_anchors_by_paragraph_only() -> None:
    # given
    text = "Resection is recommended for a solitary tumour.\n\nAblation is an alternative.\n"

    # when
    candidates = segment_document(text, fmt="text", source_key="test.inline")

    # then
    assert [(c.anchor, c.heading_path) for c in candidates] == [("¶1", ()), ("¶2", ())]


def test_segment_document_anchors_are_unique_within_each_fixture() -> None:
    for name, fmt in FIXTURE_FILES:
        # given
        candidates = segment_fixture(name, fmt)

        # when
        anchors = [c.anchor for c in candidates]

        # then
        assert len(anchors) == len(set(anchors)), name
        assert all(1 <= len(anchor) <= 200 for anchor in anchors), name


def test_segment_document_long_heading_path_anchor_fits_unit_limit() -> None:
    # given
    long_title = "Management of " + "very " * 60 + "advanced disease"
    text = f"# {long_title}\n\n## Subsection\n\nSorafenib is recommended.\n"

    # when
    [candidate] = segment_document(text, fmt="markdown", source_key="test.inline")

    # then
    assert len(candidate.anchor) <= 200
    assert candidate.anchor.endswith("Subsection > ¶1")
    assert candidate.heading_path == (long_title, "Subsection")


def test_segment_document_html_headings_build_path() -> None:
    # given
    candidates = segment_fixture("lung_guideline.html", "html")

    # when
    first = candidates[0]

    # then
    assert first.anchor == "§ 3.1 First-line treatment > ¶1"
    assert first.heading_path == (
        "Lung adenocarcinoma guideline (fictional test edition)",
        "3 Systemic therapy",
        "3.1 First-line treatment",
    )


def test_segment_document_text_numbered_headings_build_path_with_pages() -> None:
    # given
    candidates = segment_fixture("breast_guideline.txt", "text")

    # when
    found = {c.anchor: c.heading_path for c in candidates}

    # then
    assert found == {
        "§ 1 Introduction > ¶1, p. 1": ("1 Introduction",),
        "§ 2.1 Adjuvant therapy > ¶1, p. 2": ("2 Systemic therapy", "2.1 Adjuvant therapy"),
        "§ 2.1 Adjuvant therapy > ¶2, p. 2": ("2 Systemic therapy", "2.1 Adjuvant therapy"),
        "§ 2.1 Adjuvant therapy > list 1 item 1, p. 2": (
            "2 Systemic therapy",
            "2.1 Adjuvant therapy",
        ),
        "§ 2.1 Adjuvant therapy > list 1 item 2, p. 2": (
            "2 Systemic therapy",
            "2.1 Adjuvant therapy",
        ),
        "§ 2.2 Follow-up > ¶1, p. 3": ("2 Systemic therapy", "2.2 Follow-up"),
        "§ 2.2 Follow-up > table 1 row 1, p. 3": ("2 Systemic therapy", "2.2 Follow-up"),
        "§ 2.2 Follow-up > table 1 row 2, p. 3": ("2 Systemic therapy", "2.2 Follow-up"),
    }


def test_segment_document_form_feed_pages_number_anchors() -> None:
    # given
    text = (
        "Fictional Lymphoma Guideline\n\n1 Front-line therapy\n"
        "R-CHOP is recommended for advanced-stage DLBCL.\n"
        "\fFictional Lymphoma Guideline\n\n"
        "Interim PET after two cycles is recommended.\n"
        "\fFictional Lymphoma Guideline\n\n2 Follow-up\n"
        "Routine surveillance CT is not recommended after complete remission.\n"
    )

    # when
    candidates = segment_document(text, fmt="text", source_key="test.inline")

    # then
    assert [c.anchor for c in candidates] == [
        "§ 1 Front-line therapy > ¶1, p. 1",
        "§ 1 Front-line therapy > ¶2, p. 2",
        "§ 2 Follow-up > ¶1, p. 3",
    ]
    assert "Fictional Lymphoma Guideline" not in all_text(candidates)


def test_segment_document_text_number_led_line_is_not_a_heading_out_of_outline() -> None:
    # given
    text = (
        "3 Radiotherapy\n\nStereotactic radiotherapy is recommended for small tumours.\n\n"
        "1 Gy test fractions\n\nAnother paragraph.\n"
    )

    # when
    candidates = segment_document(text, fmt="text", source_key="test.inline")

    # then
    assert [c.heading_path for c in candidates] == [("3 Radiotherapy",)] * 3
    assert candidates[1].text == "1 Gy test fractions"


def test_segment_document_text_capitals_title_stays_above_numbered_headings() -> None:
    # given
    text = (
        "HEPATOCELLULAR CARCINOMA GUIDELINE\n\nCONTENTS\n1 Introduction 3\n2 Staging 4\n\n"
        "1 Introduction\nThis test document is fictional.\n\n"
        "2 Staging\nPatients should be staged with multiphase CT.\n"
    )

    # when
    candidates = segment_document(text, fmt="text", source_key="test.inline")

    # then
    assert [(c.anchor, c.heading_path) for c in candidates] == [
        ("§ 1 Introduction > ¶1", ("HEPATOCELLULAR CARCINOMA GUIDELINE", "1 Introduction")),
        ("§ 2 Staging > ¶1", ("HEPATOCELLULAR CARCINOMA GUIDELINE", "2 Staging")),
    ]
    assert candidates[1].suggested_kind == UnitKind.STAGING_RULE.value
    assert candidates[1].suggested_cancer_type == UnitCancerType.HCC.value


def test_segment_document_html_paragraphs_inside_one_list_item_stay_one_item() -> None:
    # given
    text = (
        "<h2>Options</h2><ol><li><p>Resection is recommended.</p><p>It needs a fit patient.</p>"
        "</li><li>Ablation<ul><li>Microwave ablation</li></ul></li></ol><p>After the list.</p>"
    )

    # when
    candidates = segment_document(text, fmt="html", source_key="test.inline")

    # then
    assert [(c.anchor, c.text) for c in candidates] == [
        ("§ Options > list 1 item 1", "Resection is recommended. It needs a fit patient."),
        ("§ Options > list 1 item 2", "Ablation"),
        ("§ Options > list 1 item 3", "Microwave ablation"),
        ("§ Options > ¶1", "After the list."),
    ]


def test_segment_document_markdown_quote_box_and_markup_are_read_as_text() -> None:
    # given
    text = (
        "## 6 Transplantation\n\n> **Recommendation 6.1** Liver transplantation is *recommended*\n"
        "> within [Milan criteria](https://example.invalid/milan) [II, A].\n"
    )

    # when
    [candidate] = segment_document(text, fmt="markdown", source_key="test.inline")

    # then
    assert candidate.anchor == "§ 6 Transplantation > ¶1"
    assert candidate.text == (
        "Recommendation 6.1 Liver transplantation is recommended within Milan criteria [II, A]."
    )
    assert candidate.native_grade == "[II, A]"


# --- grades ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "fmt", "anchor", "grade"),
    [
        ("hcc_guideline.md", "markdown", f"{MD_52} > ¶1", "[I, A]"),
        ("hcc_guideline.md", "markdown", f"{MD_52} > ¶3 s1", "(LoE 2, strong)"),
        ("hcc_guideline.md", "markdown", f"{MD_52} > ¶3 s2", "(LoE 3, weak)"),
        ("hcc_guideline.md", "markdown", f"{MD_52} > list 1 item 1", "[II, D]"),
        (
            "hcc_guideline.md",
            "markdown",
            f"{MD_52} > ¶4",
            "Evidence quality: intermediate; Strength of recommendation: moderate",
        ),
        (
            "lung_guideline.html",
            "html",
            "§ 3.1 First-line treatment > ¶1",
            "strong recommendation, moderate-quality evidence",
        ),
        ("lung_guideline.html", "html", "§ 3.1 First-line treatment > ¶2 s1", "category 1"),
        ("lung_guideline.html", "html", "§ 3.1 First-line treatment > ¶2 s2", "category 2A"),
        (
            "breast_guideline.txt",
            "text",
            "§ 2.1 Adjuvant therapy > ¶1, p. 2",
            "Level of evidence: I, strength of recommendation: A",
        ),
        ("breast_guideline.txt", "text", "§ 2.2 Follow-up > ¶1, p. 3", "(LoE 2, strong)"),
        ("breast_guideline.txt", "text", "§ 2.1 Adjuvant therapy > ¶2, p. 2", None),
    ],
)
def test_segment_document_native_grade_copied_verbatim(
    name: str, fmt: Format, anchor: str, grade: str | None
) -> None:
    # given
    candidates = by_anchor(segment_fixture(name, fmt))

    # when
    candidate = candidates[anchor]

    # then
    assert candidate.native_grade == grade
    if grade is not None:
        assert grade in candidate.text


@pytest.mark.parametrize(
    ("text", "grade"),
    [
        ("Sorafenib is recommended [I, A].", "[I, A]"),
        ("Use drug X [II, B; ESMO-MCBS v1.1 score: 4].", "[II, B; ESMO-MCBS v1.1 score: 4]"),
        ("Drug Y is preferred (category 2B).", "category 2B"),
        ("Option Z (Category 3)", "Category 3"),
        ("Resection is preferred (LoE 1b, GoR A).", "(LoE 1b, GoR A)"),
        ("Level of evidence 2, strength strong.", "Level of evidence 2, strength strong"),
        (
            "We suggest X (conditional recommendation, very low certainty of evidence).",
            "conditional recommendation, very low certainty of evidence",
        ),
        (
            "Offer X. Evidence quality: high; Strength of recommendation: strong.",
            "Evidence quality: high; Strength of recommendation: strong",
        ),
        ("Options are (i, a) surgery and (ii, b) ablation.", None),
        ("Patients in category 4 were excluded.", None),
        ("No grade at all here.", None),
    ],
)
def test_find_native_grade_recognises_each_grading_system(text: str, grade: str | None) -> None:
    # given / when
    found = find_native_grade(text)

    # then
    assert found == grade


def test_find_native_grade_takes_the_earliest_label() -> None:
    # given
    text = "X is recommended (category 1) and Y is an option [II, B]."

    # when
    found = find_native_grade(text)

    # then
    assert found == "category 1"


def test_segment_document_grade_line_after_statement_joins_that_statement() -> None:
    # given
    text = (
        "## 4 Therapy\n\nLenvatinib is an option for unresectable disease.\n\n"
        "[I, A]\n\nNext statement without grade.\n"
    )

    # when
    candidates = segment_document(text, fmt="markdown", source_key="test.inline")

    # then
    assert [(c.anchor, c.text, c.native_grade) for c in candidates] == [
        ("§ 4 Therapy > ¶1", "Lenvatinib is an option for unresectable disease. [I, A]", "[I, A]"),
        ("§ 4 Therapy > ¶3", "Next statement without grade.", None),
    ]


# --- statements -------------------------------------------------------------------------------


def test_segment_document_paragraph_with_several_recommendations_splits_into_sentences() -> None:
    # given
    candidates = by_anchor(segment_fixture("hcc_guideline.md", "markdown"))

    # when
    first, second = candidates[f"{MD_52} > ¶3 s1"], candidates[f"{MD_52} > ¶3 s2"]

    # then
    assert (
        first.text
        == "Resection is preferred over ablation for tumours larger than 3 cm (LoE 2, strong)."
    )
    assert second.text == (
        "Ablation should be offered when resection is not feasible (LoE 3, weak). "
        "Both options were discussed at length by the panel."
    )


def test_split_statements_keeps_single_recommendation_with_rationale_whole() -> None:
    # given
    text = (
        "Atezolizumab plus bevacizumab is recommended first line [I, A]. "
        "This is based on improved overall survival in a randomised trial."
    )

    # when
    pieces = split_statements(text)

    # then
    assert pieces == [text]


def test_split_statements_grade_sentence_stays_with_its_statement() -> None:
    # given
    text = (
        "Ablation is recommended for tumours up to 2 cm. This is a category 2A recommendation. "
        "Resection should be offered for larger tumours, e.g. 4 cm. Evidence quality: high; "
        "Strength of recommendation: strong."
    )

    # when
    pieces = split_statements(text)

    # then
    assert pieces == [
        "Ablation is recommended for tumours up to 2 cm. This is a category 2A recommendation.",
        "Resection should be offered for larger tumours, e.g. 4 cm. Evidence quality: high; "
        "Strength of recommendation: strong.",
    ]


def test_split_statements_leading_context_joins_first_statement() -> None:
    # given
    text = (
        "In compensated cirrhosis, two options exist. Resection is recommended for a single "
        "nodule. Transplantation should be considered within Milan criteria."
    )

    # when
    pieces = split_statements(text)

    # then
    assert pieces == [
        "In compensated cirrhosis, two options exist. Resection is recommended for a single "
        "nodule.",
        "Transplantation should be considered within Milan criteria.",
    ]


def test_segment_document_text_wrapped_lines_join_with_hyphen_kept() -> None:
    # given
    text = (
        "1 Therapy\nAdjuvant capecitabine is recom-\nmended after well-\n"
        "differentiated resection.\n"
    )

    # when
    [candidate] = segment_document(text, fmt="text", source_key="test.inline")

    # then
    assert (
        candidate.text
        == "Adjuvant capecitabine is recom-mended after well-differentiated resection."
    )


# --- kinds and cancer types -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "fmt", "anchor", "kind"),
    [
        ("hcc_guideline.md", "markdown", "§ 5.1 Staging > ¶1", UnitKind.STAGING_RULE),
        ("hcc_guideline.md", "markdown", f"{MD_52} > ¶1", UnitKind.THERAPY_STEP),
        ("hcc_guideline.md", "markdown", f"{MD_52} > list 1 item 1", UnitKind.CONTRAINDICATION),
        ("hcc_guideline.md", "markdown", f"{MD_52} > list 1 item 2", UnitKind.ORGAN_FUNCTION_GATE),
        (
            "hcc_guideline.md",
            "markdown",
            f"{MD_52} > list 1 item 3",
            UnitKind.SURVEILLANCE_INTERVAL,
        ),
        ("hcc_guideline.md", "markdown", f"{MD_52} > table 1 row 1", UnitKind.INTERACTION),
        (
            "lung_guideline.html",
            "html",
            "§ 3.1 First-line treatment > list 1 item 1",
            UnitKind.ORGAN_FUNCTION_GATE,
        ),
        (
            "lung_guideline.html",
            "html",
            "§ 3.1 First-line treatment > list 1 item 3",
            UnitKind.INTERACTION,
        ),
        (
            "breast_guideline.txt",
            "text",
            "§ 2.1 Adjuvant therapy > ¶2, p. 2",
            UnitKind.ORGAN_FUNCTION_GATE,
        ),
        (
            "breast_guideline.txt",
            "text",
            "§ 2.1 Adjuvant therapy > list 1 item 1, p. 2",
            UnitKind.CONTRAINDICATION,
        ),
        (
            "breast_guideline.txt",
            "text",
            "§ 2.2 Follow-up > ¶1, p. 3",
            UnitKind.SURVEILLANCE_INTERVAL,
        ),
    ],
)
def test_segment_document_suggests_kind(
    name: str, fmt: Format, anchor: str, kind: UnitKind
) -> None:
    # given
    candidates = by_anchor(segment_fixture(name, fmt))

    # when
    candidate = candidates[anchor]

    # then
    assert candidate.suggested_kind == kind.value


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("Sorafenib is contraindicated in decompensated cirrhosis.", UnitKind.CONTRAINDICATION),
        ("Live vaccines should not be given during therapy.", UnitKind.CONTRAINDICATION),
        ("Avoid NSAIDs in patients with varices.", UnitKind.CONTRAINDICATION),
        ("Rifampicin is an inducer of CYP3A4.", UnitKind.INTERACTION),
        ("Ketoconazole is an inhibitor of P-gp.", UnitKind.INTERACTION),
        ("Check drug interactions before starting.", UnitKind.INTERACTION),
        ("CT every 3-6 months for 2 years.", UnitKind.SURVEILLANCE_INTERVAL),
        ("Follow-up visits are scheduled yearly.", UnitKind.SURVEILLANCE_INTERVAL),
        ("Tumours invading the visceral pleura are classified as T2a.", UnitKind.STAGING_RULE),
        ("Stage IIIA comprises T1-2 N2 disease.", UnitKind.STAGING_RULE),
        ("Pembrolizumab should be offered first line.", UnitKind.THERAPY_STEP),
        ("Lobectomy is preferred over sublobar resection.", UnitKind.THERAPY_STEP),
        ("For stage III disease, chemoradiotherapy is recommended.", UnitKind.THERAPY_STEP),
        ("Do not start anthracyclines if LVEF is below 50%.", UnitKind.ORGAN_FUNCTION_GATE),
        ("Reduce the dose when bilirubin exceeds 3 x ULN.", UnitKind.ORGAN_FUNCTION_GATE),
        ("Creatinine clearance must be at least 60 mL/min.", UnitKind.ORGAN_FUNCTION_GATE),
        ("TACE is recommended for Child-Pugh A patients.", UnitKind.THERAPY_STEP),
        ("Child-Pugh B8 or worse excludes the trial drug.", UnitKind.ORGAN_FUNCTION_GATE),
    ],
)
def test_suggest_kind_keyword_rules(text: str, kind: UnitKind) -> None:
    # given / when
    suggested = suggest_kind(text)

    # then
    assert suggested == kind.value


def test_suggest_kind_none_without_keywords() -> None:
    # given
    text = "The panel met four times in 2023."

    # when
    suggested = suggest_kind(text)

    # then
    assert suggested is None


def test_segment_document_suggested_values_belong_to_bundle_enums() -> None:
    for name, fmt in FIXTURE_FILES:
        # given
        candidates = segment_fixture(name, fmt)

        # when
        kinds = {c.suggested_kind for c in candidates} - {None}
        cancers = {c.suggested_cancer_type for c in candidates} - {None}

        # then
        assert kinds <= {k.value for k in UnitKind}, name
        assert cancers <= {c.value for c in UnitCancerType}, name


@pytest.mark.parametrize(
    ("text", "path", "kind", "cancer"),
    [
        ("Sorafenib is recommended.", ("Hepatocellular carcinoma", "Systemic"), None, "hcc"),
        ("Osimertinib for EGFR-mutant NSCLC.", ("Breast cancer",), None, "lung_adenocarcinoma"),
        ("R-CHOP is recommended.", (), None, "lymphoma"),
        ("Lumpectomy with radiotherapy.", (), None, "breast"),
        ("Lung cancer and breast cancer screening.", ("Hepatocellular carcinoma",), None, None),
        ("Fluconazole interacts with this drug.", (), "interaction", "any"),
        ("Adjuvant therapy is recommended.", ("General",), "therapy_step", None),
    ],
)
def test_suggest_cancer_type_prefers_statement_then_headings(
    text: str, path: tuple[str, ...], kind: str | None, cancer: str | None
) -> None:
    # given / when
    suggested = suggest_cancer_type(text, path, kind=kind)

    # then
    assert suggested == cancer


def test_segment_document_cancer_type_from_fixture_headings_and_text() -> None:
    # given
    md = segment_fixture("hcc_guideline.md", "markdown")
    lung = segment_fixture("lung_guideline.html", "html")
    breast = by_anchor(segment_fixture("breast_guideline.txt", "text"))

    # when
    md_types = {c.suggested_cancer_type for c in md}
    lung_types = {c.suggested_cancer_type for c in lung}

    # then
    assert md_types == {"hcc"}
    assert lung_types == {"lung_adenocarcinoma"}
    assert breast["§ 2.1 Adjuvant therapy > ¶1, p. 2"].suggested_cancer_type == "breast"
    # An interaction naming no cancer, under headings naming none, holds for any cancer.
    assert breast["§ 2.1 Adjuvant therapy > list 1 item 2, p. 2"].suggested_cancer_type == "any"


# --- tables -------------------------------------------------------------------------------------


def test_segment_document_markdown_table_rows_carry_header_context() -> None:
    # given
    candidates = by_anchor(segment_fixture("hcc_guideline.md", "markdown"))

    # when
    rows = [candidates[f"{MD_52} > table 1 row {n}"].text for n in (1, 2)]

    # then
    assert rows == [
        "Agent: Sorafenib | Interaction: Strong CYP3A4 inducers lower exposure | "
        "Management: Avoid co-administration",
        "Agent: Lenvatinib | Interaction: None of clinical relevance | "
        "Management: No dose adjustment",
    ]


def test_segment_document_html_table_rows_carry_header_context_and_caption() -> None:
    # given
    candidates = by_anchor(segment_fixture("lung_guideline.html", "html"))
    section = "§ 3.1 First-line treatment"

    # when
    caption = candidates[f"{section} > ¶3"].text
    rows = [candidates[f"{section} > table 1 row {n}"].text for n in (1, 2, 3)]

    # then
    assert caption == "Table 2. Follow-up after curative treatment"
    assert rows == [
        "Stage: I–II | Imaging: CT chest | Interval: every 6 months for 2 years",
        "Stage: III | Imaging: CT chest | Interval: every 3 months",
        # The stage cell spans two rows: the second row keeps its columns aligned.
        "Imaging: Brain MRI | Interval: yearly",
    ]


def test_segment_document_html_colspan_header_labels_each_column() -> None:
    # given
    text = (
        "<h2>Doses</h2><table><tr><th rowspan='2'>Agent</th><th colspan='2'>Dose</th></tr>"
        "<tr><th>Normal renal function</th><th>CrCl below 30 mL/min</th></tr>"
        "<tr><td>Drug A</td><td>100 mg</td><td>50 mg</td></tr></table>"
    )

    # when
    [row] = segment_document(text, fmt="html", source_key="test.inline")

    # then
    assert row.anchor == "§ Doses > table 1 row 1"
    assert row.text == (
        "Agent: Drug A | Dose / Normal renal function: 100 mg | Dose / CrCl below 30 mL/min: 50 mg"
    )


def test_segment_document_text_aligned_columns_read_as_table() -> None:
    # given
    candidates = by_anchor(segment_fixture("breast_guideline.txt", "text"))

    # when
    rows = [candidates[f"§ 2.2 Follow-up > table 1 row {n}, p. 3"].text for n in (1, 2)]

    # then
    assert rows == [
        "Regimen: AC | Cycles: 4 | Interval: every 3 weeks",
        "Regimen: Paclitaxel | Cycles: 12 | Interval: weekly",
    ]


# --- boilerplate --------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "fmt"), FIXTURE_FILES)
def test_segment_document_drops_references_and_table_of_contents(name: str, fmt: Format) -> None:
    # given / when
    candidates = segment_fixture(name, fmt)
    text = all_text(candidates)

    # then
    assert "et al" not in text
    assert "fictional study" not in text.lower()
    assert "Table of contents" not in text
    assert "...." not in text
    assert all("References" not in c.heading_path for c in candidates)


def test_segment_document_drops_running_headers_and_page_footers() -> None:
    # given
    source = load("breast_guideline.txt")
    assert source.count("FICTIONAL SOCIETY OF BREAST ONCOLOGY") == 3

    # when
    text = all_text(segment_document(source, fmt="text", source_key="test.fixture"))

    # then
    assert "FICTIONAL SOCIETY" not in text
    assert "Page " not in text
    assert "--- page" not in text


def test_segment_document_running_header_kept_when_not_repeated() -> None:
    # given: the same line at the top of one page out of three is content, not a header
    text = (
        "--- page 1 ---\nUnique opening line about staging.\n\nBody one.\n"
        "--- page 2 ---\nBody two.\n--- page 3 ---\nBody three.\n"
    )

    # when
    candidates = segment_document(text, fmt="text", source_key="test.inline")

    # then
    assert candidates[0].text == "Unique opening line about staging."
    assert [c.anchor for c in candidates] == ["¶1, p. 1", "¶2, p. 1", "¶3, p. 2", "¶4, p. 3"]


def test_segment_document_html_ignores_script_style_nav_and_head() -> None:
    # given / when
    text = all_text(segment_fixture("lung_guideline.html", "html"))

    # then
    assert "Chemotherapy should be offered to everyone" not in text
    assert "color" not in text
    assert "menus" not in text
    assert "Fictional lung guideline" not in text


def test_segment_document_drops_citation_outside_references_section() -> None:
    # given
    text = (
        "## 2 Evidence\n\nSorafenib is recommended for advanced disease.\n\n"
        "Smith J, Doe A, et al. A fictional phase III trial. J Fict Oncol 2020;12:100-110.\n"
    )

    # when
    candidates = segment_document(text, fmt="markdown", source_key="test.inline")

    # then
    assert [c.text for c in candidates] == ["Sorafenib is recommended for advanced disease."]


def test_segment_document_bold_references_line_drops_what_follows() -> None:
    # given
    text = (
        "## 2 Therapy\n\nSorafenib is recommended.\n\n**References**\n\n"
        "- A fictional citation without the usual shape\n\n## 3 Follow-up\n\n"
        "Surveillance every 3 months.\n"
    )

    # when
    candidates = segment_document(text, fmt="markdown", source_key="test.inline")

    # then
    assert [c.anchor for c in candidates] == ["§ 2 Therapy > ¶1", "§ 3 Follow-up > ¶1"]


# --- provenance and determinism -------------------------------------------------------------


@pytest.mark.parametrize(("name", "fmt"), FIXTURE_FILES)
def test_segment_document_every_candidate_words_occur_in_order_in_source(
    name: str, fmt: Format
) -> None:
    # given
    source = load(name)
    if fmt == "html":
        source = html.unescape(source)

    # when
    candidates = segment_document(source, fmt=fmt, source_key="test.fixture")

    # then
    assert candidates
    for candidate in candidates:
        # A table row reads "Header: value | …": each pair is header words, then the value's.
        parts = candidate.text.split(" | ") if " row " in candidate.anchor else [candidate.text]
        for part in parts:
            assert words_in_order(part, source), (candidate.anchor, part)
        assert candidate.text == " ".join(candidate.text.split())


@pytest.mark.parametrize(("name", "fmt"), FIXTURE_FILES)
def test_segment_document_is_deterministic(name: str, fmt: Format) -> None:
    # given
    source = load(name)

    # when
    first = segment_document(source, fmt=fmt, source_key="test.fixture")
    second = segment_document(source, fmt=fmt, source_key="test.fixture")

    # then
    assert first == second
    assert repr(first) == repr(second)


def test_candidate_is_frozen() -> None:
    # given
    [candidate] = segment_document("Resection is recommended.", fmt="text", source_key="test.x")

    # when / then
    with pytest.raises(dataclasses.FrozenInstanceError):
        candidate.text = "changed"  # type: ignore[misc]


def test_fingerprint_recognises_unchanged_candidates_on_reimport() -> None:
    # given
    old = (
        "## 1 Therapy\n\nResection is recommended for a single tumour.\n\n"
        "Ablation is an option up to 3 cm.\n"
    )
    new = (
        "## 1 Therapy\n\nA new opening statement is recommended.\n\n"
        "Resection is recommended for a single tumour.\n\nAblation is an option up to 2 cm.\n"
    )

    # when
    before = segment_document(old, fmt="markdown", source_key="test.v1")
    after = segment_document(new, fmt="markdown", source_key="test.v2")

    # then
    unchanged = {c.fingerprint for c in before} & {c.fingerprint for c in after}
    moved = next(c for c in after if c.fingerprint in unchanged)
    assert len(unchanged) == 1
    assert moved.anchor == "§ 1 Therapy > ¶2"
    assert moved.fingerprint == before[0].fingerprint == fingerprint(before[0].text)
    assert re.fullmatch(r"[0-9a-f]{64}", moved.fingerprint)


def test_fingerprint_ignores_pdf_ligatures_and_spacing() -> None:
    # given
    plain, ligature = "Specific first-line therapy", "Speci\ufb01c  first-line\u00a0therapy"

    # when / then
    assert fingerprint(plain) == fingerprint(ligature)
    assert fingerprint(plain) != fingerprint(plain.lower())


# --- limits and errors ------------------------------------------------------------------------


def test_segment_document_rejects_input_over_size_limit() -> None:
    # given
    ascii_text = "a" * (MAX_INPUT_BYTES + 1)
    multibyte_text = "é" * (MAX_INPUT_BYTES // 2 + 1)  # few characters, too many UTF-8 bytes

    # when / then
    for text in (ascii_text, multibyte_text):
        with pytest.raises(IngestError, match="larger than 20 MB"):
            segment_document(text, fmt="text", source_key="test.big")


def test_segment_document_accepts_input_at_size_limit() -> None:
    # given
    text = " " * MAX_INPUT_BYTES

    # when
    candidates = segment_document(text, fmt="text", source_key="test.big")

    # then
    assert candidates == []


@pytest.mark.parametrize(
    ("text", "fmt", "source_key", "message"),
    [
        ("x", "pdf", "test.key", "unknown format"),
        ("x", "markdown", "Not A Key", "source key"),
        (b"bytes", "text", "test.key", "must be text"),
    ],
)
def test_segment_document_rejects_bad_arguments(
    text: object, fmt: str, source_key: str, message: str
) -> None:
    # given / when / then
    with pytest.raises(IngestError, match=message):
        segment_document(text, fmt=fmt, source_key=source_key)


@pytest.mark.slow
def test_segment_document_five_megabytes_segment_in_a_few_seconds() -> None:
    # given: a long guideline made of many numbered sections of the Markdown fixture's prose
    section = load("hcc_guideline.md").split("### 5.2 Treatment of early-stage disease\n", 1)[1]
    section = section.split("## References", 1)[0]
    parts = ["# Fictional long guideline\n"]
    size, number = 0, 0
    while size < 5_000_000:
        number += 1
        part = f"\n## {number} Chapter {number}\n\n{section}"
        parts.append(part)
        size += len(part)
    text = "".join(parts)

    # when (speed is a benchmark figure, not an assertion; pytest-timeout catches a hang)
    candidates = segment_document(text, fmt="markdown", source_key="test.big")

    # then
    assert len(candidates) == 10 * number


def test_segment_document_deeply_nested_html_does_not_recurse() -> None:
    # given
    depth = 100_000
    text = "<div>" * depth + "<p>Resection is recommended.</p>" + "</div>" * depth

    # when
    candidates = segment_document(text, fmt="html", source_key="test.deep")

    # then
    assert [c.text for c in candidates] == ["Resection is recommended."]


def test_segment_document_never_fetches_html_resources(monkeypatch: pytest.MonkeyPatch) -> None:
    # given: any network use fails loudly (the suite's autouse guard also forbids it)
    def refuse(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("segmenter opened a socket")

    monkeypatch.setattr(socket, "create_connection", refuse)
    text = (
        '<img src="https://example.invalid/a.png"><link rel="stylesheet" '
        'href="https://example.invalid/s.css"><iframe src="https://example.invalid/"></iframe>'
        "<p>Resection is recommended.</p>"
    )

    # when
    candidates = segment_document(text, fmt="html", source_key="test.net")

    # then
    assert [c.text for c in candidates] == ["Resection is recommended."]


@pytest.mark.parametrize(
    ("span", "columns"),
    [("\u00b2", 1), ("\u0663", 1), ("9" * 5000, 50), ("0" * 4000 + "2", 2), ("0", 1)],
    ids=["superscript-two", "arabic-indic-three", "five-thousand-digits", "leading-zeros", "zero"],
)
def test_segment_document_html_odd_colspan_falls_back_safely(span: str, columns: int) -> None:
    # given a header cell whose colspan is not a plain ASCII number, or an absurd one
    text = (
        f"<h2>Doses</h2><table><tr><th colspan='{span}'>Dose</th><th>Agent</th></tr>"
        "<tr><td>100 mg</td><td>Drug A</td></tr></table>"
    )

    # when
    [row] = segment_document(text, fmt="html", source_key="test.inline")

    # then the table is read (no crash in int()), the span 1 unless it is a real number,
    # and capped at MAX_SPAN (50) columns
    assert row.anchor == "§ Doses > table 1 row 1"
    if columns == 1:
        assert row.text == "Dose: 100 mg | Agent: Drug A"
    else:
        assert row.text.startswith("Dose: 100 mg | Dose: Drug A")


# --- hostile input: every parser linear in its input --------------------------------------------

_MIB = 1024 * 1024


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(MARKUP_WORST))
def test_segment_document_is_linear_on_a_megabyte_of_hostile_markup(kind: str) -> None:
    # given a 1 MiB document built to make an end-anchored pattern retry every position (30 KB
    # of it used to hold the ingestion worker for seconds)
    make, fmt = MARKUP_WORST[kind]
    # when it is segmented
    segment_document(make(_MIB), fmt=fmt, source_key="hostile-1")
    # then it finishes, and the cost grows about 4 times from 256 KiB to 1 MiB where the old
    # patterns grew 16 times (hours for a megabyte); make bench prints the time at 1 MiB
    # (ingest_hostile_1mib_worst, target under 1 s)
    assert_linear(
        lambda size: make(size),
        lambda text: segment_document(str(text), fmt=fmt, source_key="hostile-1"),
        small=_MIB // 4,
        large=_MIB,
    )


def test_atx_closing_hashes_and_table_delimiters_still_parse() -> None:
    text = "# Staging ##   \n\nCriterion | Value\n|:--- | ---:|\nECOG | 0-1\n\nIntro. . . . 12\n"
    candidates = segment_document(text, fmt="markdown", source_key="small-1")
    assert [c.anchor for c in candidates] == ["§ Staging > table 1 row 1"]
    assert candidates[0].text == "Criterion: ECOG | Value: 0-1"
