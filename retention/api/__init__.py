"""The API client: the only package of retention that speaks HTTP.

Import what you need from its modules (``retention.api.client``, ``retention.api.models``,
...): this file imports nothing, so a module that needs only the resource models does not
load requests and urllib3.
"""
