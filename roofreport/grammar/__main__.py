"""`python -m roofreport.grammar`: rebuild the shipped grammar cache from the `.lark` sources
(run after editing a grammar; `tests/test_startup.py` fails while the cache is stale)."""

from roofreport.grammar import rule_cache

print(f"wrote {rule_cache.write()}")
