#!/usr/bin/env python3
"""Training instances for the second stage from a project's own history
(docs/retrieval.md, "Refitting the second stage"): past fixes with the files
they changed, in SWE-bench format (`instance_id`, `repo`, `base_commit`,
`problem_statement`, `patch_files`).

  build_training.py {sympy,sphinx,xarray} CAP --repos DIR --exclude VERIFIED.json --out OUT.json

DIR holds clones named `<owner>__<name>` (bare or not). Commits tied to an
instance of the exclusion dataset are left out: its issue or PR number (or a
number its problem statement names) in the subject or body, its base commit
as the parent, or among the first 12 commits after its base commit that touch
its patched files. Only commits before 2024 changing 1-3 non-test Python
files are kept; CAP of them, chosen by SHA-1 of the id.
"""
import subprocess, json, hashlib, re, sys
import argparse
R=''
def git(repo,*a):
    return subprocess.run(['git','--git-dir',R+repo]+list(a),capture_output=True,text=True,errors='replace').stdout
def is_test(p):
    n=p.rsplit('/',1)[-1]
    return p.startswith(('testing/','tests/','test/')) or '/tests/' in p or '/testing/' in p or n.startswith('test_') or n.endswith('_test.py') or n=='conftest.py'
V=[]
def exclusions(d,repo):
    vs=[v for v in V if v['repo']==repo]
    prs={int(v['instance_id'].rsplit('-',1)[1]) for v in vs}
    for v in vs: prs|={int(n) for n in re.findall(r'(?:#|issues/|pull/)(\d{3,6})',v['problem_statement'])}
    bases={v['base_commit'] for v in vs}
    near=set()
    for v in vs:
        files=re.findall(r'^diff --git a/(\S+)',v['golden_patch'],re.M)
        near|=set(git(d,'rev-list','--reverse','--topo-order',v['base_commit']+'..HEAD','--',*files).split()[:12])
    return prs,bases,near
def src_files(d,par,c):
    files=git(d,'diff-tree','--no-commit-id','-r','--name-only',par,c).split()
    return [f for f in files if f.endswith('.py') and not is_test(f)], files
def keep(d,repo,insts,cap):
    keys=sorted(insts,key=lambda k:hashlib.sha1(k.encode()).hexdigest())[:cap]
    print(repo,len(insts),'kept',len(keys),file=sys.stderr)
    return [insts[k] for k in keys]
out=[]
def sphinx(cap):
    d,repo='sphinx-doc__sphinx','sphinx-doc/sphinx'
    prs,bases,near=exclusions(d,repo); insts={}; ex=0
    log=git(d,'log','--since=2016-01-01','--until=2024-01-01','--no-merges','--format=%x01%H%x00%P%x00%s%x00%b')
    for rec in log.split('\x01')[1:]:
        c,p,s,b=rec.split('\x00',3)
        m=re.match(r'^(?:Fix|Fixes|Fixed|Close|Closes|Closed) #(\d+)\s*[:(]?\s*(.*)$',s)
        if not m or len(p.split())!=1: continue
        title=m.group(2).rstrip(')').strip()
        if len(title.split())<3: continue
        nums={int(x) for x in re.findall(r'#(\d+)',s+b)}
        if nums&prs or p.strip() in bases or c in near: ex+=1; continue
        src,_=src_files(d,p.strip(),c)
        if not 1<=len(src)<=3: continue
        iid=f'{d}-fix-{m.group(1)}'
        insts[iid]=dict(instance_id=iid,repo=repo,base_commit=p.strip(),problem_statement=title+'\n'+b.strip(),patch_files=src)
    print('sphinx excluded',ex,file=sys.stderr)
    return keep(d,repo,insts,cap)
def xarray(cap):
    d,repo='pydata__xarray','pydata/xarray'
    prs,bases,near=exclusions(d,repo); insts={}; ex=0
    log=git(d,'log','--first-parent','--since=2017-01-01','--until=2024-01-01','--format=%x01%H%x00%P%x00%s','--','doc/whats-new.rst')
    for rec in log.split('\x01')[1:]:
        c,p,s=[x.strip() for x in rec.split('\x00')]
        par=p.split()[0]
        m=re.search(r'\(#(\d+)\)$',s)
        if not m or re.match(r'(?i)^(bump|\[pre-commit|pre-commit|update|docs?|doc:|ci|typing|mypy)',s): continue
        nums={int(x) for x in re.findall(r'#(\d+)',s)}
        if nums&prs or par in bases or c in near: ex+=1; continue
        src,_=src_files(d,par,c)
        if not 1<=len(src)<=3: continue
        diff=git(d,'diff',par,c,'--','doc/whats-new.rst')
        added=[l[1:] for l in diff.splitlines() if l.startswith('+') and not l.startswith('+++')]
        entry=' '.join(x.strip() for x in added if x.strip() and not x.strip().startswith('By '))
        entry=re.sub(r'By `[^`]*`_?\.?','',entry)
        if len(entry)<30: continue
        iid=f'{d}-pr-{m.group(1)}'
        text=re.sub(r'\s*\(#\d+\)$','',s)+'\n'+entry
        insts[iid]=dict(instance_id=iid,repo=repo,base_commit=par,problem_statement=text,patch_files=src)
    print('xarray excluded',ex,file=sys.stderr)
    return keep(d,repo,insts,cap)
def sympy(cap):
    d,repo='sympy__sympy','sympy/sympy'
    prs,bases,near=exclusions(d,repo); insts={}; ex=0
    log=git(d,'log','--merges','--first-parent','--since=2014-01-01','--until=2024-01-01','--format=%x01%H%x00%P%x00%s%x00%b')
    for rec in log.split('\x01')[1:]:
        c,p,s,b=rec.split('\x00',3)
        m=re.match(r'Merge pull request #(\d+)',s)
        ps=p.split()
        if not m or len(ps)!=2: continue
        title=b.strip().split('\n')[0].strip()
        if len(title.split())<3: continue
        nums={int(x) for x in re.findall(r'#(\d+)',s+b)}
        if nums&prs or ps[0] in bases or c in near: ex+=1; continue
        src,files=src_files(d,ps[0],c)
        if not 1<=len(src)<=3: continue
        tests=[f for f in files if is_test(f) and f.endswith('.py')]
        if not tests: continue
        diff=git(d,'diff',ps[0],c,'--',*tests)
        # the added regression-test functions, body kept (the reporter's reproducer in test form)
        code=[];cur=None
        for l in diff.splitlines():
            if l.startswith('+') and not l.startswith('+++'):
                t=l[1:]
                if re.match(r'def test_issue_\d+',t): cur=[t]; code.append(cur); continue
                if cur is not None:
                    if t and not t.startswith((' ','\t')): cur=None; continue
                    cur.append(t)
            else: cur=None
        if not code: continue
        body='\n'.join('\n'.join(x[1:25]) for x in code[:2])
        body=re.sub(r'^\s+','',body,flags=re.M)
        iid=f'{d}-pr-{m.group(1)}'
        insts[iid]=dict(instance_id=iid,repo=repo,base_commit=ps[0],problem_statement=title+'\n\n```\n'+body+'\n```\n',patch_files=src)
    print('sympy excluded',ex,file=sys.stderr)
    return keep(d,repo,insts,cap)
if __name__ == '__main__':
    ap = argparse.ArgumentParser()
    ap.add_argument('source', choices=['sympy', 'sphinx', 'xarray'])
    ap.add_argument('cap', type=int)
    ap.add_argument('--repos', required=True)
    ap.add_argument('--exclude', required=True, help='a SWE-bench-format dataset whose fixes must not be trained on')
    ap.add_argument('--out', required=True)
    a = ap.parse_args()
    R = a.repos.rstrip('/') + '/'
    V = json.load(open(a.exclude))
    json.dump(globals()[a.source](a.cap), open(a.out, 'w'), indent=0)
