"""Rebalancing: moving running pods to better nodes (kplace rebalance) and the ROADEF 2012 machine reassignment."""
