import json, os, sys
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mdtboard.settings.test")
from benchmarks.common import repository_tests_package, PUBLIC_CASES
repository_tests_package()
import django; django.setup()
import benchmarks.tokens as t
from tests import llm_stub
captured = []
orig = llm_stub.StubLLM._receive
def rec(self, request):
    captured.append(request)
    return orig(self, request)
llm_stub.StubLLM._receive = rec
name = sys.argv[1]
r = t.measure(PUBLIC_CASES / f"{name}.json")
seen=set()
for q in captured:
    schema = (q.json_schema or {}).get("title")
    key=(q.role, schema)
    if key in seen: continue
    seen.add(key)
    user = json.loads(q.user[q.user.find("{"):]) if "{" in q.user else {}
    parts = {k: len(json.dumps(v, ensure_ascii=False))//4 for k, v in user.items()}
    print(q.role, schema, "total", q.prompt_tokens, "system", len(q.system)//4, "schema", len(json.dumps(q.response_format))//4, parts)
