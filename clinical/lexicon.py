"""Which drugs a plan item gives: generic and brand names, regimen acronyms and class phrases
resolved to canonical generics and classes, with negated or contrastive mentions left out.

The safety gate, the consensus and the grounding check decide by this, so that "Keytruda",
"PD-1 checkpoint inhibitor immunotherapy" (with no agents listed) and "R-CHOP" are recognised
as what they give, and "anthracycline-free", "etoposide in place of doxorubicin" or "without
bevacizumab" do not count as giving the drug they name.

Reading is conservative: when a mention is ambiguous it counts as given (a safe option wrongly
withdrawn is visible and recoverable; a contraindicated drug wrongly kept is not). A class
phrase with no named member of that class ("checkpoint inhibitor") stands for every member.

Tables: generic names (INN), common brand names (EU/US labels), regimen acronyms as written in
the NCCN and ESMO guidelines, and pharmacological classes (ATC level 4/5, WHO 2024). They are
limited to the drugs of the four cancers the knowledge base covers and the drugs its safety
rules name; a drug absent from them is matched by its written name only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache, lru_cache
from typing import Final

# --- drugs: canonical generic -> its classes ---------------------------------------------------
_ICI_PD1 = ("anti_pd1", "ici", "immunotherapy")
_ICI_PDL1 = ("anti_pdl1", "ici", "immunotherapy")
_ICI_CTLA4 = ("anti_ctla4", "ici", "immunotherapy")
_HER2_AB = ("anti_her2", "her2_antibody")
_HER2_ADC = ("anti_her2", "her2_antibody", "adc")
_HER2_TKI = ("anti_her2", "tki")
_ANTHRA = ("anthracycline", "chemotherapy")
_PLATIN = ("platinum", "chemotherapy")
_TAXANE = ("taxane", "chemotherapy")
_FP = ("fluoropyrimidine", "chemotherapy")
_VEGF_AB = ("anti_vegf",)
_MKI = ("tki", "multikinase")
_EGFR = ("tki", "egfr_tki")
_ALK = ("tki", "alk_tki")
_TKI = ("tki",)
_CDK = ("cdk46",)
_AI = ("aromatase_inhibitor", "endocrine")
_GNRH = ("gnrh", "endocrine")
_CD20 = ("anti_cd20", "immunotherapy")
_CART = ("car_t", "immunotherapy")
_BISPEC = ("bispecific", "immunotherapy")
_BONE = ("bone_agent",)
_BISPHOS = ("bisphosphonate", "bone_agent")
_CHEMO = ("chemotherapy",)
_VINCA = ("vinca", "chemotherapy")
_BTK = ("btk_inhibitor", "tki")
_PARP = ("parp_inhibitor",)
_PENICILLIN = ("penicillin", "beta_lactam", "antibiotic")
_CEPHALOSPORIN = ("cephalosporin", "beta_lactam", "antibiotic")

DRUGS: Final[Mapping[str, tuple[str, ...]]] = {
    # checkpoint inhibitors
    "pembrolizumab": _ICI_PD1,
    "nivolumab": _ICI_PD1,
    "cemiplimab": _ICI_PD1,
    "dostarlimab": _ICI_PD1,
    "tislelizumab": _ICI_PD1,
    "toripalimab": _ICI_PD1,
    "retifanlimab": _ICI_PD1,
    "sintilimab": _ICI_PD1,
    "camrelizumab": _ICI_PD1,
    "atezolizumab": _ICI_PDL1,
    "durvalumab": _ICI_PDL1,
    "avelumab": _ICI_PDL1,
    "ipilimumab": _ICI_CTLA4,
    "tremelimumab": _ICI_CTLA4,
    "relatlimab": ("anti_lag3", "ici", "immunotherapy"),
    # HER2-directed
    "trastuzumab": _HER2_AB,
    "pertuzumab": _HER2_AB,
    "margetuximab": _HER2_AB,
    "trastuzumab emtansine": _HER2_ADC,
    "trastuzumab deruxtecan": _HER2_ADC,
    "tucatinib": _HER2_TKI,
    "lapatinib": _HER2_TKI,
    "neratinib": _HER2_TKI,
    # anthracyclines and anthracenediones
    "doxorubicin": _ANTHRA,
    "liposomal doxorubicin": _ANTHRA,
    "epirubicin": _ANTHRA,
    "daunorubicin": _ANTHRA,
    "idarubicin": _ANTHRA,
    "mitoxantrone": _ANTHRA,
    # platinum, taxanes, antimetabolites, other cytotoxics
    "cisplatin": _PLATIN,
    "carboplatin": _PLATIN,
    "oxaliplatin": _PLATIN,
    "paclitaxel": _TAXANE,
    "nab-paclitaxel": _TAXANE,
    "docetaxel": _TAXANE,
    "fluorouracil": _FP,
    "capecitabine": _FP,
    "tegafur": _FP,
    "pemetrexed": ("antifolate", "chemotherapy"),
    "methotrexate": ("antifolate", "chemotherapy"),
    "high-dose methotrexate": ("antifolate", "chemotherapy"),
    "gemcitabine": _CHEMO,
    "cytarabine": _CHEMO,
    "cyclophosphamide": ("alkylating", "chemotherapy"),
    "ifosfamide": ("alkylating", "chemotherapy"),
    "bendamustine": ("alkylating", "chemotherapy"),
    "dacarbazine": ("alkylating", "chemotherapy"),
    "procarbazine": ("alkylating", "chemotherapy"),
    "etoposide": _CHEMO,
    "irinotecan": _CHEMO,
    "topotecan": _CHEMO,
    "bleomycin": _CHEMO,
    "eribulin": _CHEMO,
    "vincristine": _VINCA,
    "vinblastine": _VINCA,
    "vinorelbine": _VINCA,
    "arsenic trioxide": (),
    # anti-angiogenic antibodies
    "bevacizumab": _VEGF_AB,
    "ramucirumab": _VEGF_AB,
    "aflibercept": _VEGF_AB,
    # kinase inhibitors
    "sorafenib": _MKI,
    "lenvatinib": _MKI,
    "cabozantinib": _MKI,
    "regorafenib": _MKI,
    "sunitinib": _MKI,
    "vandetanib": _MKI,
    "nintedanib": _MKI,
    "osimertinib": _EGFR,
    "gefitinib": _EGFR,
    "erlotinib": _EGFR,
    "afatinib": _EGFR,
    "dacomitinib": _EGFR,
    "lazertinib": _EGFR,
    "mobocertinib": _EGFR,
    "alectinib": _ALK,
    "brigatinib": _ALK,
    "lorlatinib": _ALK,
    "crizotinib": _ALK,
    "ceritinib": _ALK,
    "ensartinib": _ALK,
    "entrectinib": _TKI,
    "repotrectinib": _TKI,
    "larotrectinib": _TKI,
    "dabrafenib": _TKI,
    "trametinib": _TKI,
    "encorafenib": _TKI,
    "binimetinib": _TKI,
    "vemurafenib": _TKI,
    "capmatinib": _TKI,
    "tepotinib": _TKI,
    "selpercatinib": _TKI,
    "pralsetinib": _TKI,
    "sotorasib": (),
    "adagrasib": (),
    "nilotinib": _TKI,
    "gilteritinib": _TKI,
    "quizartinib": _TKI,
    "ibrutinib": _BTK,
    "acalabrutinib": _BTK,
    "zanubrutinib": _BTK,
    "amivantamab": ("egfr_antibody",),
    # breast targeted and endocrine
    "palbociclib": _CDK,
    "ribociclib": _CDK,
    "abemaciclib": _CDK,
    "olaparib": _PARP,
    "talazoparib": _PARP,
    "alpelisib": ("pi3k_inhibitor",),
    "inavolisib": ("pi3k_inhibitor",),
    "capivasertib": ("akt_inhibitor",),
    "everolimus": ("mtor_inhibitor",),
    "tamoxifen": ("serm", "endocrine"),
    "toremifene": ("serm", "endocrine"),
    "letrozole": _AI,
    "anastrozole": _AI,
    "exemestane": _AI,
    "fulvestrant": ("serd", "endocrine"),
    "elacestrant": ("serd", "endocrine"),
    "goserelin": _GNRH,
    "leuprorelin": _GNRH,
    "triptorelin": _GNRH,
    "sacituzumab govitecan": ("adc",),
    "datopotamab deruxtecan": ("adc",),
    "enfortumab vedotin": ("adc",),
    # lymphoma
    "rituximab": _CD20,
    "obinutuzumab": _CD20,
    "ofatumumab": _CD20,
    "polatuzumab vedotin": ("adc",),
    "brentuximab vedotin": ("adc",),
    "loncastuximab tesirine": ("adc",),
    "tafasitamab": ("anti_cd19", "immunotherapy"),
    "glofitamab": _BISPEC,
    "epcoritamab": _BISPEC,
    "mosunetuzumab": _BISPEC,
    "axicabtagene ciloleucel": _CART,
    "lisocabtagene maraleucel": _CART,
    "tisagenlecleucel": _CART,
    "lenalidomide": ("imid",),
    "thalidomide": ("imid",),
    "pomalidomide": ("imid",),
    "venetoclax": ("bcl2_inhibitor",),
    "panobinostat": (),
    "ivosidenib": (),
    # bone-modifying agents
    "denosumab": _BONE,
    "zoledronic acid": _BISPHOS,
    "pamidronate": _BISPHOS,
    "ibandronate": _BISPHOS,
    "clodronate": _BISPHOS,
    # anti-infectives of the plans (H. pylori eradication, prophylaxis): the allergy rules
    # name them by class
    "amoxicillin": _PENICILLIN,
    "ampicillin": _PENICILLIN,
    "piperacillin": _PENICILLIN,
    "flucloxacillin": _PENICILLIN,
    "benzylpenicillin": _PENICILLIN,
    "phenoxymethylpenicillin": _PENICILLIN,
    "temocillin": _PENICILLIN,
    "cefalexin": _CEPHALOSPORIN,
    "cefadroxil": _CEPHALOSPORIN,
    "cefaclor": _CEPHALOSPORIN,
    "cefuroxime": _CEPHALOSPORIN,
    "cefazolin": _CEPHALOSPORIN,
    "ceftriaxone": _CEPHALOSPORIN,
    "cefotaxime": _CEPHALOSPORIN,
    "ceftazidime": _CEPHALOSPORIN,
    "cefepime": _CEPHALOSPORIN,
    "meropenem": ("carbapenem", "beta_lactam", "antibiotic"),
    "imipenem": ("carbapenem", "beta_lactam", "antibiotic"),
    "ertapenem": ("carbapenem", "beta_lactam", "antibiotic"),
    "clarithromycin": ("macrolide", "antibiotic"),
    "azithromycin": ("macrolide", "antibiotic"),
    "erythromycin": ("macrolide", "antibiotic"),
    "metronidazole": ("nitroimidazole", "antibiotic"),
    "tinidazole": ("nitroimidazole", "antibiotic"),
    "tetracycline": ("tetracyclines", "antibiotic"),
    "doxycycline": ("tetracyclines", "antibiotic"),
    "minocycline": ("tetracyclines", "antibiotic"),
    "levofloxacin": ("fluoroquinolone", "antibiotic"),
    "co-trimoxazole": ("sulfonamide_antibiotic", "antibiotic"),
}

# A drug that contains another: a rule about the parent concerns it too.
PARENTS: Final[Mapping[str, tuple[str, ...]]] = {
    "nab-paclitaxel": ("paclitaxel",),
    "liposomal doxorubicin": ("doxorubicin",),
    "trastuzumab emtansine": ("trastuzumab",),
    "trastuzumab deruxtecan": ("trastuzumab",),
    "high-dose methotrexate": ("methotrexate",),
}

# Other names of a drug: brand names, abbreviations, older INNs. Lower case.
SYNONYMS: Final[Mapping[str, str]] = {
    "keytruda": "pembrolizumab",
    "pembro": "pembrolizumab",
    "opdivo": "nivolumab",
    "nivo": "nivolumab",
    "libtayo": "cemiplimab",
    "jemperli": "dostarlimab",
    "tevimbra": "tislelizumab",
    "loqtorzi": "toripalimab",
    "zynyz": "retifanlimab",
    "tyvyt": "sintilimab",
    "tecentriq": "atezolizumab",
    "atezo": "atezolizumab",
    "imfinzi": "durvalumab",
    "durva": "durvalumab",
    "bavencio": "avelumab",
    "yervoy": "ipilimumab",
    "imjudo": "tremelimumab",
    "treme": "tremelimumab",
    "herceptin": "trastuzumab",
    "herzuma": "trastuzumab",
    "kanjinti": "trastuzumab",
    "ogivri": "trastuzumab",
    "ontruzant": "trastuzumab",
    "trazimera": "trastuzumab",
    "perjeta": "pertuzumab",
    "margenza": "margetuximab",
    "kadcyla": "trastuzumab emtansine",
    "t-dm1": "trastuzumab emtansine",
    "tdm1": "trastuzumab emtansine",
    "ado-trastuzumab emtansine": "trastuzumab emtansine",
    "enhertu": "trastuzumab deruxtecan",
    "t-dxd": "trastuzumab deruxtecan",
    "tdxd": "trastuzumab deruxtecan",
    "fam-trastuzumab deruxtecan": "trastuzumab deruxtecan",
    "tukysa": "tucatinib",
    "tykerb": "lapatinib",
    "tyverb": "lapatinib",
    "nerlynx": "neratinib",
    "adriamycin": "doxorubicin",
    "hydroxydaunorubicin": "doxorubicin",
    "doxorubicin hydrochloride": "doxorubicin",
    "pegylated liposomal doxorubicin": "liposomal doxorubicin",
    "doxil": "liposomal doxorubicin",
    "caelyx": "liposomal doxorubicin",
    "myocet": "liposomal doxorubicin",
    "ellence": "epirubicin",
    "pharmorubicin": "epirubicin",
    "farmorubicin": "epirubicin",
    "platinol": "cisplatin",
    "paraplatin": "carboplatin",
    "carbo": "carboplatin",
    "eloxatin": "oxaliplatin",
    "taxol": "paclitaxel",
    "abraxane": "nab-paclitaxel",
    "nab paclitaxel": "nab-paclitaxel",
    "albumin-bound paclitaxel": "nab-paclitaxel",
    "taxotere": "docetaxel",
    "5-fu": "fluorouracil",
    "5fu": "fluorouracil",
    "5-fluorouracil": "fluorouracil",
    "xeloda": "capecitabine",
    "alimta": "pemetrexed",
    "pemfexy": "pemetrexed",
    "mtx": "methotrexate",
    "hd-mtx": "high-dose methotrexate",
    "hd mtx": "high-dose methotrexate",
    "high dose methotrexate": "high-dose methotrexate",
    "gemzar": "gemcitabine",
    "ara-c": "cytarabine",
    "cytoxan": "cyclophosphamide",
    "endoxan": "cyclophosphamide",
    "levact": "bendamustine",
    "treanda": "bendamustine",
    "bendeka": "bendamustine",
    "vp-16": "etoposide",
    "vepesid": "etoposide",
    "camptosar": "irinotecan",
    "halaven": "eribulin",
    "oncovin": "vincristine",
    "navelbine": "vinorelbine",
    "trisenox": "arsenic trioxide",
    "avastin": "bevacizumab",
    "mvasi": "bevacizumab",
    "zirabev": "bevacizumab",
    "bev": "bevacizumab",
    "cyramza": "ramucirumab",
    "zaltrap": "aflibercept",
    "nexavar": "sorafenib",
    "lenvima": "lenvatinib",
    "cabometyx": "cabozantinib",
    "stivarga": "regorafenib",
    "sutent": "sunitinib",
    "caprelsa": "vandetanib",
    "vargatef": "nintedanib",
    "ofev": "nintedanib",
    "tagrisso": "osimertinib",
    "iressa": "gefitinib",
    "tarceva": "erlotinib",
    "giotrif": "afatinib",
    "gilotrif": "afatinib",
    "vizimpro": "dacomitinib",
    "lazcluze": "lazertinib",
    "alecensa": "alectinib",
    "alunbrig": "brigatinib",
    "lorbrena": "lorlatinib",
    "lorviqua": "lorlatinib",
    "xalkori": "crizotinib",
    "zykadia": "ceritinib",
    "rozlytrek": "entrectinib",
    "augtyro": "repotrectinib",
    "vitrakvi": "larotrectinib",
    "tafinlar": "dabrafenib",
    "mekinist": "trametinib",
    "braftovi": "encorafenib",
    "mektovi": "binimetinib",
    "zelboraf": "vemurafenib",
    "tabrecta": "capmatinib",
    "tepmetko": "tepotinib",
    "retevmo": "selpercatinib",
    "gavreto": "pralsetinib",
    "lumakras": "sotorasib",
    "lumykras": "sotorasib",
    "krazati": "adagrasib",
    "tasigna": "nilotinib",
    "imbruvica": "ibrutinib",
    "calquence": "acalabrutinib",
    "brukinsa": "zanubrutinib",
    "rybrevant": "amivantamab",
    "ibrance": "palbociclib",
    "kisqali": "ribociclib",
    "verzenio": "abemaciclib",
    "verzenios": "abemaciclib",
    "lynparza": "olaparib",
    "talzenna": "talazoparib",
    "piqray": "alpelisib",
    "itovebi": "inavolisib",
    "truqap": "capivasertib",
    "afinitor": "everolimus",
    "nolvadex": "tamoxifen",
    "fareston": "toremifene",
    "femara": "letrozole",
    "arimidex": "anastrozole",
    "aromasin": "exemestane",
    "faslodex": "fulvestrant",
    "orserdu": "elacestrant",
    "zoladex": "goserelin",
    "leuprolide": "leuprorelin",
    "lupron": "leuprorelin",
    "eligard": "leuprorelin",
    "prostap": "leuprorelin",
    "decapeptyl": "triptorelin",
    "trelstar": "triptorelin",
    "trodelvy": "sacituzumab govitecan",
    "datroway": "datopotamab deruxtecan",
    "padcev": "enfortumab vedotin",
    "mabthera": "rituximab",
    "rituxan": "rituximab",
    "truxima": "rituximab",
    "ruxience": "rituximab",
    "riabni": "rituximab",
    "gazyva": "obinutuzumab",
    "gazyvaro": "obinutuzumab",
    "polivy": "polatuzumab vedotin",
    "polatuzumab": "polatuzumab vedotin",
    "pola": "polatuzumab vedotin",
    "adcetris": "brentuximab vedotin",
    "zynlonta": "loncastuximab tesirine",
    "monjuvi": "tafasitamab",
    "minjuvi": "tafasitamab",
    "columvi": "glofitamab",
    "epkinly": "epcoritamab",
    "tepkinly": "epcoritamab",
    "lunsumio": "mosunetuzumab",
    "yescarta": "axicabtagene ciloleucel",
    "axi-cel": "axicabtagene ciloleucel",
    "breyanzi": "lisocabtagene maraleucel",
    "liso-cel": "lisocabtagene maraleucel",
    "kymriah": "tisagenlecleucel",
    "tisa-cel": "tisagenlecleucel",
    "revlimid": "lenalidomide",
    "venclexta": "venetoclax",
    "venclyxto": "venetoclax",
    "xgeva": "denosumab",
    "prolia": "denosumab",
    "zometa": "zoledronic acid",
    "zoledronate": "zoledronic acid",
    "amoxycillin": "amoxicillin",
    "co-amoxiclav": "amoxicillin",
    "augmentin": "amoxicillin",
    "cephalexin": "cefalexin",
    "cotrimoxazole": "co-trimoxazole",
    "trimethoprim-sulfamethoxazole": "co-trimoxazole",
    "sulfamethoxazole": "co-trimoxazole",
    "septrin": "co-trimoxazole",
    "bactrim": "co-trimoxazole",
}

# Regimens by the acronym or trial that names them -> the generics they give. Acronyms of three
# letters or fewer are matched in capitals only ("AC", "EC", "TC", "BR").
REGIMENS: Final[Mapping[str, tuple[str, ...]]] = {
    "CHOP": ("cyclophosphamide", "doxorubicin", "vincristine"),
    "R-CHOP": ("rituximab", "cyclophosphamide", "doxorubicin", "vincristine"),
    "R-mini-CHOP": ("rituximab", "cyclophosphamide", "doxorubicin", "vincristine"),
    "mini-CHOP": ("cyclophosphamide", "doxorubicin", "vincristine"),
    "G-CHOP": ("obinutuzumab", "cyclophosphamide", "doxorubicin", "vincristine"),
    "R-CHP": ("rituximab", "cyclophosphamide", "doxorubicin"),
    "Pola-R-CHP": ("polatuzumab vedotin", "rituximab", "cyclophosphamide", "doxorubicin"),
    "R-CEOP": ("rituximab", "cyclophosphamide", "etoposide", "vincristine"),
    "R-mini-CEOP": ("rituximab", "cyclophosphamide", "etoposide", "vincristine"),
    "R-GCVP": ("rituximab", "gemcitabine", "cyclophosphamide", "vincristine"),
    "R-CVP": ("rituximab", "cyclophosphamide", "vincristine"),
    "CVP": ("cyclophosphamide", "vincristine"),
    "DA-EPOCH-R": ("etoposide", "doxorubicin", "vincristine", "cyclophosphamide", "rituximab"),
    "EPOCH": ("etoposide", "doxorubicin", "vincristine", "cyclophosphamide"),
    "R-ICE": ("rituximab", "ifosfamide", "carboplatin", "etoposide"),
    "ICE": ("ifosfamide", "carboplatin", "etoposide"),
    "R-DHAP": ("rituximab", "cytarabine", "cisplatin"),
    "DHAP": ("cytarabine", "cisplatin"),
    "R-DHAX": ("rituximab", "cytarabine", "oxaliplatin"),
    "R-DHAOx": ("rituximab", "cytarabine", "oxaliplatin"),
    "R-GDP": ("rituximab", "gemcitabine", "cisplatin"),
    "GDP": ("gemcitabine", "cisplatin"),
    "R-GemOx": ("rituximab", "gemcitabine", "oxaliplatin"),
    "BR": ("bendamustine", "rituximab"),
    "B-R": ("bendamustine", "rituximab"),
    "Pola-BR": ("polatuzumab vedotin", "bendamustine", "rituximab"),
    "ABVD": ("doxorubicin", "bleomycin", "vinblastine", "dacarbazine"),
    "BEACOPP": (
        "bleomycin",
        "etoposide",
        "doxorubicin",
        "cyclophosphamide",
        "vincristine",
        "procarbazine",
    ),
    "BrECADD": (
        "brentuximab vedotin",
        "etoposide",
        "cyclophosphamide",
        "doxorubicin",
        "dacarbazine",
    ),
    "AC": ("doxorubicin", "cyclophosphamide"),
    "EC": ("epirubicin", "cyclophosphamide"),
    "FEC": ("fluorouracil", "epirubicin", "cyclophosphamide"),
    "AC-T": ("doxorubicin", "cyclophosphamide", "paclitaxel"),
    "EC-T": ("epirubicin", "cyclophosphamide", "paclitaxel"),
    "TC": ("docetaxel", "cyclophosphamide"),
    "TCH": ("docetaxel", "carboplatin", "trastuzumab"),
    "TCHP": ("docetaxel", "carboplatin", "trastuzumab", "pertuzumab"),
    "THP": ("paclitaxel", "trastuzumab", "pertuzumab"),
    "Phesgo": ("pertuzumab", "trastuzumab"),
    "CMF": ("cyclophosphamide", "methotrexate", "fluorouracil"),
    "CAPOX": ("capecitabine", "oxaliplatin"),
    "XELOX": ("capecitabine", "oxaliplatin"),
    "FOLFOX": ("fluorouracil", "oxaliplatin"),
    "FOLFIRI": ("fluorouracil", "irinotecan"),
    "Opdualag": ("nivolumab", "relatlimab"),
    "STRIDE": ("durvalumab", "tremelimumab"),
    "atezo-bev": ("atezolizumab", "bevacizumab"),
    "IMbrave150": ("atezolizumab", "bevacizumab"),
    "HIMALAYA": ("durvalumab", "tremelimumab"),
    "IMpower150": ("atezolizumab", "bevacizumab", "carboplatin", "paclitaxel"),
    "KEYNOTE-189": ("pembrolizumab", "pemetrexed", "carboplatin"),
    "KEYNOTE-407": ("pembrolizumab", "carboplatin", "paclitaxel"),
    "KEYNOTE-522": (
        "pembrolizumab",
        "carboplatin",
        "paclitaxel",
        "doxorubicin",
        "cyclophosphamide",
    ),
    "CheckMate 9LA": ("nivolumab", "ipilimumab", "carboplatin", "pemetrexed"),
    "CheckMate 227": ("nivolumab", "ipilimumab"),
    "FLAURA2": ("osimertinib", "pemetrexed", "carboplatin"),
    "POLARIX": ("polatuzumab vedotin", "rituximab", "cyclophosphamide", "doxorubicin"),
    "CLEOPATRA": ("pertuzumab", "trastuzumab", "docetaxel"),
}

# Class phrases (regular expressions over lower-case text) -> class.
CLASS_PHRASES: Final[Mapping[str, tuple[str, ...]]] = {
    "anti_pd1": (
        r"anti-?pd-?1",
        r"pd-?1 (?:checkpoint )?(?:inhibitors?|blockers?|blockade|antibod(?:y|ies)|agents?)",
        r"pd-\(l\)1 (?:checkpoint )?(?:inhibitors?|blockers?|blockade|antibod(?:y|ies))",
    ),
    "anti_pdl1": (
        r"anti-?pd-?l1",
        r"pd-?l1 (?:checkpoint )?(?:inhibitors?|blockers?|blockade|antibod(?:y|ies)|agents?)",
    ),
    "anti_ctla4": (
        r"anti-?ctla-?4",
        r"ctla-?4 (?:checkpoint )?(?:inhibitors?|blockers?|blockade|antibod(?:y|ies))",
    ),
    "ici": (
        r"(?:immune[- ])?checkpoint[- ](?:inhibitors?|blockade|blockers?|therapy|antibod(?:y|ies))",
        r"icis?",
        r"immune checkpoints?",
    ),
    "immunotherapy": (
        r"(?:chemo-?|radio-?)?immunotherap(?:y|ies)",
        r"immuno-?chemotherap(?:y|ies)",
        r"immuno-oncology",
    ),
    "anti_her2": (
        r"anti-?her2",
        r"her2[- ](?:directed|targeted|targeting|blockade|antibod(?:y|ies))",
        r"her2[- ](?:therap(?:y|ies)|agents?)",
        r"dual her2",
    ),
    "anthracycline": (r"anthracyclines?", r"anthracycline-based"),
    "platinum": (r"platinum", r"platinum-based", r"platins?"),
    "taxane": (r"taxanes?",),
    "fluoropyrimidine": (r"fluoropyrimidines?",),
    "anti_vegf": (
        r"anti-?vegf",
        r"vegf (?:antibod(?:y|ies)|inhibitors?)",
        r"anti-?angiogenic antibod(?:y|ies)",
    ),
    "multikinase": (r"multi-?kinase inhibitors?",),
    "tki": (r"tkis?", r"tyrosine[- ]kinase inhibitors?", r"kinase inhibitors?"),
    "egfr_tki": (r"egfr[- ](?:tkis?|inhibitors?|tyrosine[- ]kinase inhibitors?)",),
    "alk_tki": (r"alk[- ](?:tkis?|inhibitors?|tyrosine[- ]kinase inhibitors?)",),
    "cdk46": (r"cdk ?4/6(?: inhibitors?)?",),
    "aromatase_inhibitor": (r"aromatase inhibitors?", r"non-?steroidal ais?"),
    "gnrh": (
        r"gnrh (?:agonists?|analogues?|analogs?)",
        r"lhrh (?:agonists?|analogues?|analogs?)",
        r"ovarian (?:function )?suppression",
    ),
    "endocrine": (r"endocrine therap(?:y|ies)", r"hormon(?:e|al) therap(?:y|ies)"),
    "anti_cd20": (r"anti-?cd20", r"cd20 (?:antibod(?:y|ies)|monoclonal)"),
    "car_t": (
        r"car[- ]t(?:[- ]cells?)?",
        r"car t-cell",
        r"chimeric antigen receptor",
    ),
    "bispecific": (r"bispecifics?(?: antibod(?:y|ies))?", r"cd20 ?x ?cd3"),
    "bone_agent": (r"bone[- ]modifying agents?",),
    "bisphosphonate": (r"bisphosphonates?",),
    "btk_inhibitor": (r"btk inhibitors?",),
    "parp_inhibitor": (r"parp inhibitors?",),
    "adc": (r"antibody[- ]drug conjugates?", r"adcs?"),
    "penicillin": (r"penicillins?",),
    "cephalosporin": (r"cephalosporins?",),
    "beta_lactam": (r"beta-?lactams?", r"β-lactams?"),
}

# Words and phrases that put the mentions after them (in the same clause) out of the item.
_PRE_CUES = (
    r"no",
    r"not",
    r"never",
    r"non",
    r"without",
    r"avoid(?:s|ing|ed)?",
    r"omit(?:s|ting|ted)?",
    r"exclud(?:e|es|ing)",
    r"except",
    r"instead of",
    r"in place of",
    r"rather than",
    r"replac(?:e|es|ing)",
    r"substitut(?:e|es|ing) for",
    r"free of",
    r"sparing",
    r"withhold(?:ing)?",
    r"hold(?:ing)?",
    r"stop(?:ping)?",
    r"discontinu(?:e|ing)",
    r"defer(?:ring|ral of)?",
    r"postpon(?:e|ing)",
    r"contraindicat(?:ed|ion|ions) (?:to|for|of|with)",
    r"cannot (?:receive|have|be given|take)",
    r"ineligible for",
    r"unfit for",
    r"unsuitable for",
    r"intolerant (?:of|to)",
    r"allerg(?:y|ic) to",
    # history: what was given before is not what this item gives
    r"progress(?:ion|ed|ing) (?:on|after|despite|during)",
    r"refractory to",
    r"resistan(?:t|ce) to",
    r"failure (?:of|on)",
    r"failed",
    r"relapse(?:d)? (?:on|after)",
    r"pretreated with",
    r"previously treated with",
    r"prior(?! to)",
    r"previous(?:ly)?",
    r"history of",
)
# ... and after the mention.
_POST_CUES = (
    r"omitted",
    r"withheld",
    r"contraindicated",
    r"avoided",
    r"excluded",
    r"stopped",
    r"discontinued",
    r"deferred",
    r"postponed",
    r"replaced",
    r"held",
    r"not (?:be )?(?:given|used|recommended|advised|indicated|started)",
    r"(?:added|started|introduced|resumed|reintroduced) (?:only )?(?:once|when|if)",
    r"once (?!daily|weekly|monthly|every|a |per )",
)
# Suffixes joined to the mention: "anthracycline-free", "cisplatin-ineligible".
_SUFFIX = re.compile(
    r"^-(?:free|sparing|ineligible|unfit|intolerant|refractory|resistant|naive|naïve|"
    r"pretreated|exposed|experienced|containing-free)\b"
)
_CONNECTORS = {"or", "nor", "and/or", "/", "-", "either", "any", "all", "other", "the", "a", "an"}
_MAX_GAP_WORDS = 4  # words between a cue and the first mention it governs
_CLAUSE_BREAK = re.compile(
    r"[;.:,()\[\]+\n]|\b(?:then|but|plus|followed by|and then|while|whereas|with)\b"
)
_PRE_CUE = re.compile(r"\b(?:" + "|".join(_PRE_CUES) + r")\b")
_POST_CUE = re.compile(
    r"^\s*(?:\w+\s+){0,2}?(?:is\s+|are\s+|be\s+)?(?:" + "|".join(_POST_CUES) + ")"
)
_WITH_OR_WITHOUT = re.compile(r"(?:with or without|±|\+/-)$")
_WITH_OR_WITHOUT_CHARS = len("with or without")

_DASHES = str.maketrans(
    {c: "-" for c in "\u2010\u2011\u2012\u2013\u2014\u2212"} | {"\u00ae": " ", "\u2122": " "}
)


def normalise(text: str) -> str:
    return text.translate(_DASHES)


@dataclass(frozen=True)
class Mention:
    start: int
    end: int
    drugs: frozenset[str]  # canonical generics (a regimen names several)
    cls: str = ""  # a class phrase
    regimen: bool = False


@dataclass
class Reading:
    """What a text gives (``drugs``: canonical generics with their parents; ``classes``: class
    phrases with no named member, standing for every member) and what it names only to exclude
    (``withheld``)."""

    drugs: set[str] = field(default_factory=set)
    classes: set[str] = field(default_factory=set)
    withheld: set[str] = field(default_factory=set)
    withheld_classes: set[str] = field(default_factory=set)
    regimen_drugs: set[str] = field(default_factory=set)


@cache
def members(cls: str) -> frozenset[str]:
    """Every drug of a class."""
    return frozenset(d for d, classes in DRUGS.items() if cls in classes)


@cache
def classes_of(drug: str) -> frozenset[str]:
    found = set(DRUGS.get(drug, ()))
    for parent in PARENTS.get(drug, ()):
        found |= set(DRUGS.get(parent, ()))
    return frozenset(found)


def with_parents(drugs: Iterable[str]) -> set[str]:
    found = set(drugs)
    for drug in list(found):
        found.update(PARENTS.get(drug, ()))
    return found


def _boundary(name: str) -> str:
    return rf"(?<![a-z0-9]){re.escape(name)}(?![a-z0-9])"


@cache
def _name_pattern() -> re.Pattern[str]:
    names = sorted({*DRUGS, *SYNONYMS}, key=len, reverse=True)
    return re.compile("|".join(_boundary(n) for n in names))


@cache
def _regimen_patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """Long acronyms case-insensitive, short ones (three letters or fewer) in capitals only."""
    long = sorted((r for r in REGIMENS if len(r) > 3), key=len, reverse=True)
    short = sorted((r for r in REGIMENS if len(r) <= 3), key=len, reverse=True)
    loose = "|".join(rf"(?<![a-z0-9]){_spaced(r.lower())}(?:-\d+)?(?![a-z0-9])" for r in long)
    strict = "|".join(rf"(?<![A-Za-z0-9-]){re.escape(r)}(?:-\d+)?(?![A-Za-z0-9])" for r in short)
    return re.compile(loose), re.compile(strict)


@cache
def _class_pattern() -> re.Pattern[str]:
    parts = [
        rf"(?P<{cls}>(?<![a-z0-9])(?:{'|'.join(phrases)})(?![a-z0-9]))"
        for cls, phrases in CLASS_PHRASES.items()
    ]
    return re.compile("|".join(parts))


def _spaced(name: str) -> str:
    """A name as a pattern in which a space may also be a hyphen or nothing."""
    return "[- ]?".join(re.escape(part) for part in name.split(" "))


def _regimen_key(matched: str) -> str:
    """The regimen a match names ("R-CHOP-21" is R-CHOP, "KEYNOTE-522" is itself)."""
    for text in (matched, re.sub(r"-\d+$", "", matched)):
        for name in REGIMENS:
            if re.fullmatch(_spaced(name.lower()), text.lower()):
                return name
    raise KeyError(matched)


def mentions(text: str) -> list[Mention]:
    """Every drug, regimen and class mention in a text, in order, without overlaps (the
    longest at a position wins: "nab-paclitaxel" over "paclitaxel")."""
    original = normalise(text)
    lower = original.lower()
    found: list[Mention] = []
    loose, strict = _regimen_patterns()
    for match in loose.finditer(lower):
        drugs = REGIMENS[_regimen_key(match.group())]
        found.append(Mention(match.start(), match.end(), frozenset(drugs), regimen=True))
    for match in strict.finditer(original):
        drugs = REGIMENS[_regimen_key(match.group())]
        found.append(Mention(match.start(), match.end(), frozenset(drugs), regimen=True))
    for match in _name_pattern().finditer(lower):
        name = match.group()
        found.append(Mention(match.start(), match.end(), frozenset({SYNONYMS.get(name, name)})))
    for match in _class_pattern().finditer(lower):
        cls = match.lastgroup or ""
        found.append(Mention(match.start(), match.end(), frozenset(), cls=cls))
    found.sort(key=lambda m: (m.start, -(m.end - m.start)))
    kept: list[Mention] = []
    for mention in found:
        if kept and mention.start < kept[-1].end:
            continue
        kept.append(mention)
    return kept


# How far either side of a mention negation is looked for, in characters: far wider than the
# four words a cue governs, and a bound, so that reading n mentions costs O(n) (issue 26: the
# whole text before each mention was read again, quadratic). The lexicon sits below the text
# readers (docs/architecture.md), so it keeps its own copy of their window.
_SCOPE_CHARS = 240


def _is_word_char(char: str) -> bool:
    return char.isalnum() or char in "_'"


def _look_back(lower: str, start: int) -> int:
    """Where the look-back before ``start`` begins: at most _SCOPE_CHARS characters, moved on
    past a word it would cut ("pia|no" must not read as the cue "no")."""
    begin = max(0, start - _SCOPE_CHARS)
    if begin > 0 and _is_word_char(lower[begin - 1]):
        while begin < start and _is_word_char(lower[begin]):
            begin += 1
    return begin


def _negated(lower: str, mention: Mention, previous: list[tuple[Mention, bool]]) -> bool:
    after = lower[mention.end : mention.end + _SCOPE_CHARS]
    if _SUFFIX.match(after):
        return True
    clause_end = _CLAUSE_BREAK.search(after)
    tail = after[: clause_end.start()] if clause_end else after
    if _POST_CUE.match(tail):
        return True
    begin = _look_back(lower, mention.start)
    before = lower[begin : mention.start]
    breaks = list(_CLAUSE_BREAK.finditer(before))
    clause_start = begin + (breaks[-1].end() if breaks else 0)
    # "with or without X" and "± X" give X (optionally): not a negation.
    if _WITH_OR_WITHOUT.search(before.rstrip()[-_WITH_OR_WITHOUT_CHARS:]):
        return False
    head = lower[clause_start : mention.start]
    cues = list(_PRE_CUE.finditer(head))
    if not cues:
        return False
    cue = cues[-1]
    gap = head[cue.end() :]
    # Mentions between the cue and this one (a list: "no X or Y") carry the cue along. The
    # nearest earlier mention decides: mentions come in order, so if it lies before the cue,
    # every earlier one does.
    if previous:
        earlier, was_negated = previous[-1]
        if earlier.start >= clause_start + cue.end() and earlier.end <= mention.start:
            words = re.findall(r"[a-z0-9/]+|-", lower[earlier.end : mention.start])
            return was_negated and all(w in _CONNECTORS for w in words)
    words = re.findall(r"[a-z0-9]+", gap)
    return len(words) <= _MAX_GAP_WORDS


@lru_cache(maxsize=4096)
def read(text: str) -> Reading:
    """What one text (a description, an agent name) gives and withholds. (Cached: the gate
    reads the same items for every rule; the result is not to be changed.)"""
    reading = Reading()
    lower = normalise(text).lower()
    seen: list[tuple[Mention, bool]] = []
    for mention in mentions(text):
        negated = _negated(lower, mention, seen)
        seen.append((mention, negated))
        if mention.cls:
            (reading.withheld_classes if negated else reading.classes).add(mention.cls)
        elif negated:
            reading.withheld |= mention.drugs
        elif mention.regimen:
            reading.regimen_drugs |= mention.drugs
        else:
            reading.drugs |= mention.drugs
    return reading


@dataclass(frozen=True)
class Given:
    """What a plan item gives: canonical drugs (with the drugs they contain) and the classes
    it names with no member, each standing for all of its members."""

    drugs: frozenset[str]
    open_classes: frozenset[str]

    @property
    def classes(self) -> frozenset[str]:
        found: set[str] = set(self.open_classes)
        for drug in self.drugs:
            found |= classes_of(drug)
        return frozenset(found)

    def gives(self, drug: str) -> bool:
        """Whether the item gives this drug, named or as a member of a class it names."""
        if drug in self.drugs:
            return True
        return any(drug in members(cls) for cls in self.open_classes)

    def gives_class(self, cls: str) -> bool:
        if any(cls in classes_of(d) for d in self.drugs):
            return True
        wanted = members(cls)
        return any(members(open_cls) & wanted for open_cls in self.open_classes)


def _expand(reading: Reading) -> set[str]:
    """The drugs a reading withholds, its classes spelled out."""
    withheld = with_parents(reading.withheld)
    for cls in reading.withheld_classes:
        withheld |= members(cls)
    return withheld


def given(
    agents: Iterable[str],
    description: str,
    *,
    read_description: bool = True,
    notes: Iterable[str] = (),
) -> Given:
    """What an item with these agents and this description gives. ``notes`` (its dose
    adjustments) only withdraw: "Without vincristine: ..." takes vincristine out of "R-CHOP";
    an agent still listed is given whatever the notes say."""
    return _given(tuple(agents), description, read_description, tuple(notes))


@lru_cache(maxsize=4096)
def _given(
    agents: tuple[str, ...], description: str, read_description: bool, notes: tuple[str, ...]
) -> Given:
    drugs: set[str] = set()
    classes: set[str] = set()
    for agent in agents:
        reading = read(agent)
        drugs |= reading.drugs | (reading.regimen_drugs - _expand(reading))
        classes |= reading.classes
    if read_description:
        reading = read(description)
        withdrawn: set[str] = set()
        for note in notes:
            withdrawn |= _expand(read(note))
        drugs |= (reading.drugs | (reading.regimen_drugs - _expand(reading))) - withdrawn
        classes |= reading.classes
    drugs = with_parents(drugs)
    # A class counts on its own only when none of its members is named ("immunotherapy with
    # rituximab" is rituximab); of two class phrases, the narrower one says which members.
    open_classes = {c for c in classes if not any(c in classes_of(d) for d in drugs)}
    open_classes = {
        c for c in open_classes if not any(members(o) < members(c) for o in open_classes)
    }
    return Given(frozenset(drugs), frozenset(open_classes))


@cache
def resolve(name: str) -> tuple[frozenset[str], frozenset[str]] | None:
    """A safety rule's agent name as (drugs, classes); None when the lexicon does not know it
    (matched by its written words instead)."""
    reading = read(name)
    drugs = reading.drugs | reading.regimen_drugs
    if not drugs and not reading.classes:
        return None
    return frozenset(drugs), frozenset(reading.classes)


@lru_cache(maxsize=4096)
def written(phrase: str, text: str) -> bool:
    """Whether a phrase the lexicon does not know occurs in a text, not negated."""
    wanted = " ".join(normalise(phrase).lower().replace("-", " ").split())
    if not wanted:
        return False
    lower = " ".join(normalise(text).lower().replace("-", " ").split())
    for match in re.finditer(_boundary(wanted), lower):
        probe = Mention(match.start(), match.end(), frozenset())
        if not _negated(lower, probe, []):
            return True
    return False


def history_agents(regimens: object, rechallenge: Iterable[str] = ()) -> list[str]:
    """The drugs the patient's prior regimens gave (as written: "letrozole + palbociclib",
    "TCHP x6"), by canonical name, less those a guideline re-uses (``rechallenge``), so that a
    rule about the patient's history withholds exactly those drugs. A drug that only contains
    another ("trastuzumab emtansine" contains trastuzumab) does not add what it contains."""
    if not isinstance(regimens, list):
        return []
    kept: set[str] = set()
    for name in rechallenge:
        found = resolve(str(name))
        kept |= set(found[0]) if found else {str(name).casefold()}
    drugs: list[str] = []
    for regimen in regimens:
        reading = read(str(regimen))
        for drug in sorted(reading.drugs | (reading.regimen_drugs - _expand(reading))):
            if drug not in kept and drug not in drugs:
                drugs.append(drug)
    return drugs
