"""Agent governance: the run policy, budgets, decisions, the audit log, receipts, the kill
switch."""
