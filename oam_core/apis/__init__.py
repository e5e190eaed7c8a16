"""Interfaces and plain data types, no I/O (reference path ``oracleagentmemory.apis``)."""
