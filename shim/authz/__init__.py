"""Authorization of the group APIs kshim answers, as the broker's StandardAuthorizer and KafkaApis
do it: ACL matching (acl.py), connection principals from SASL (principal.py), the broker's ACLs
(cache.py), per-API checks and error answers (apis.py). Sans-IO; shim/groupservice/authz.py drives it."""
