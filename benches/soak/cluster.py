# cluster.py OUT: the e2e bench's full-size cluster (1,000 Services, 10,000 pods, 100 nodes) as a List file.
import json,sys
S,P,N=1000,10000,100
def ip(i): return f"10.{1+i//65536}.{(i//256)%256}.{i%256}"
items=[{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"bench"}}]
for n in range(N):
    items.append({"apiVersion":"v1","kind":"Node","metadata":{"name":f"n-{n}","labels":{"topology.kubernetes.io/zone":f"z-{n%3}"}},"status":{"allocatable":{"cpu":"4"},"conditions":[{"type":"Ready","status":"True"}]}})
for s in range(S):
    items.append({"apiVersion":"v1","kind":"Service","metadata":{"name":f"s-{s}","namespace":"bench"},"spec":{"selector":{"app":f"s-{s}"},"ports":[{"name":"http","port":80,"targetPort":8080}]}})
for i in range(P):
    items.append({"apiVersion":"v1","kind":"Pod","metadata":{"name":f"p-{i}","namespace":"bench","labels":{"app":f"s-{i%S}"}},"spec":{"nodeName":f"n-{i%N}","containers":[{"name":"c","image":"i","ports":[{"name":"http","containerPort":8080}]}]},"status":{"phase":"Running","podIP":ip(i),"podIPs":[{"ip":ip(i)}],"conditions":[{"type":"Ready","status":"True","lastTransitionTime":"2026-01-01T00:00:00Z"}]}})
json.dump({"apiVersion":"v1","kind":"List","items":items},open(sys.argv[1],"w"))
