# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 06 · DeviceMesh 的形状：`ParallelDims` 算术
#
# torchtitan 用 `ParallelDims(dp_replicate, dp_shard, cp, tp, pp, ep, etp, world_size)` 描述并行度：
# - `dp_shard=-1` 表示 `world // (dp_replicate·cp·tp·pp)`；随后要求 `dp_replicate·dp_shard·cp·tp·pp == world`，否则报 "Invalid parallel dims"。**ep 不在乘积里。**
# - ep > 1 时，etp 只能等于 tp 或 1。
# - `build_mesh()` 把一维 world mesh 展开成三种形状：
#   - dense（数据加载）`(pp, batch=rep·shard, cp, tp)`；
#   - fsdp `(pp, rep, fsdp=shard·cp, tp)`；
#   - expert `(pp, rep, efsdp=fsdp·tp/(etp·ep), ep, etp)`（efsdp 必须是整数）。
# - loss mesh 的大小 = batch·cp；verl 的 DP 大小 = shard·rep（不含 cp）。
#
# 课程用 2 卡：`data_parallel_shard_size=2`、`context_parallel_size=1`。
#
# ---
#
# # 06 · DeviceMesh shapes: `ParallelDims` arithmetic
#
# torchtitan describes parallelism with `ParallelDims(dp_replicate, dp_shard, cp, tp, pp, ep, etp, world_size)`:
# - `dp_shard=-1` means `world // (dp_replicate·cp·tp·pp)`; then `dp_replicate·dp_shard·cp·tp·pp == world` must hold,
#   else "Invalid parallel dims". **ep is not in the product.**
# - with ep > 1, etp must equal tp or 1.
# - `build_mesh()` unflattens the 1-D world mesh three ways:
#   - dense (data loading) `(pp, batch=rep·shard, cp, tp)`;
#   - fsdp `(pp, rep, fsdp=shard·cp, tp)`;
#   - expert `(pp, rep, efsdp=fsdp·tp/(etp·ep), ep, etp)` (efsdp must be a whole number).
# - the loss mesh has size batch·cp; verl's DP size is shard·rep (cp not included).
#
# The course runs on 2 cards: `data_parallel_shard_size=2`, `context_parallel_size=1`.

# %% [markdown]
# ## 任务：`mesh_shapes(world, dp_replicate=1, dp_shard=-1, cp=1, tp=1, pp=1, ep=1, etp=1) -> dict`
#
# 返回 `{"dense": (pp, batch, cp, tp), "fsdp": (pp, rep, fsdp, tp), "expert": (pp, rep, efsdp, ep, etp), "loss": int, "verl_dp": int}`。
# 任何非法组合（度数 < 1、乘积不等于 world、etp 不是 tp 或 1、efsdp 不是整数）都抛出 `ValueError`。
#
# ---
#
# ## Task: `mesh_shapes(world, dp_replicate=1, dp_shard=-1, cp=1, tp=1, pp=1, ep=1, etp=1) -> dict`
#
# Return `{"dense": (pp, batch, cp, tp), "fsdp": (pp, rep, fsdp, tp), "expert": (pp, rep, efsdp, ep, etp), "loss": int,
# "verl_dp": int}`. Raise `ValueError` on any invalid combination (a degree < 1, product != world, etp neither tp nor 1,
# efsdp not a whole number).

# %%
def mesh_shapes(world, dp_replicate=1, dp_shard=-1, cp=1, tp=1, pp=1, ep=1, etp=1):
    """Mesh shapes, loss size and verl DP size for one ParallelDims setting."""
    ### BEGIN SOLUTION
    for name, v in dict(world=world, dp_replicate=dp_replicate, cp=cp, tp=tp, pp=pp, ep=ep, etp=etp).items():
        if v < 1:
            raise ValueError(f"{name} must be >= 1, got {v}")
    if dp_shard == -1:
        dp_shard = world // (dp_replicate * cp * tp * pp)
    if dp_shard < 1 or dp_replicate * dp_shard * cp * tp * pp != world:
        raise ValueError(f"Invalid parallel dims: {dp_replicate}*{dp_shard}*{cp}*{tp}*{pp} != {world}")
    if ep > 1 and etp not in (tp, 1):
        raise ValueError("with ep > 1, etp must be tp or 1")
    fsdp = dp_shard * cp
    if (fsdp * tp) % (etp * ep):
        raise ValueError("efsdp = fsdp*tp/(etp*ep) is not a whole number")
    efsdp = fsdp * tp // (etp * ep)
    batch = dp_replicate * dp_shard
    return {
        "dense": (pp, batch, cp, tp),
        "fsdp": (pp, dp_replicate, fsdp, tp),
        "expert": (pp, dp_replicate, efsdp, ep, etp),
        "loss": batch * cp,
        "verl_dp": batch,
    }
    ### STUB
    # raise NotImplementedError("mesh_shapes: resolve dp_shard, validate, then build the three shapes")
    ### END SOLUTION

# %%
# Public self-check: the course's 2-card setting and one invalid setting
print(mesh_shapes(2, dp_shard=2))
print(mesh_shapes(8, dp_shard=-1, cp=2))
try:
    mesh_shapes(8, dp_shard=2, cp=2)
    print("should have raised")
except ValueError as exc:
    print("ValueError:", exc)

# %% tags=["grader"]
# Grader only: never in the template or the solution. Hidden cases with their expected values
# (CHECKS: the answer file), and typical mistakes as patches of the solution with the score
# and the check each must fail.
CHECKS = {'course_table': {'calls': [{'args': [2],
                             'kwargs': {'dp_shard': 2},
                             'public': True,
                             'expect': {'dense': [1, 2, 1, 1],
                                        'fsdp': [1, 1, 2, 1],
                                        'expert': [1, 1, 2, 1, 1],
                                        'loss': 2,
                                        'verl_dp': 2},
                             'label': 'world 2, shard 2 (course)',
                             'rules': ['dense_shape', 'fsdp_shape', 'expert_shape', 'loss_verl']},
                            {'args': [2],
                             'kwargs': {'dp_shard': 1, 'cp': 2},
                             'public': True,
                             'expect': {'dense': [1, 1, 2, 1],
                                        'fsdp': [1, 1, 2, 1],
                                        'expert': [1, 1, 2, 1, 1],
                                        'loss': 2,
                                        'verl_dp': 1},
                             'label': 'world 2, shard 1, cp 2',
                             'rules': ['dense_shape', 'fsdp_shape', 'expert_shape', 'loss_verl']},
                            {'args': [8],
                             'kwargs': {'dp_shard': -1, 'cp': 2},
                             'public': True,
                             'expect': {'dense': [1, 4, 2, 1],
                                        'fsdp': [1, 1, 8, 1],
                                        'expert': [1, 1, 8, 1, 1],
                                        'loss': 8,
                                        'verl_dp': 4},
                             'label': 'world 8, shard -1, cp 2',
                             'rules': ['shard_resolve',
                                       'dense_shape',
                                       'fsdp_shape',
                                       'expert_shape',
                                       'loss_verl']},
                            {'args': [8],
                             'kwargs': {'dp_replicate': 2, 'dp_shard': 2, 'tp': 2},
                             'public': True,
                             'expect': {'dense': [1, 4, 1, 2],
                                        'fsdp': [1, 2, 2, 2],
                                        'expert': [1, 2, 4, 1, 1],
                                        'loss': 4,
                                        'verl_dp': 4},
                             'label': 'world 8, rep 2, shard 2, tp 2',
                             'rules': ['dense_shape', 'fsdp_shape', 'expert_shape', 'loss_verl']},
                            {'args': [8],
                             'kwargs': {'dp_shard': 8, 'ep': 4},
                             'public': True,
                             'expect': {'dense': [1, 8, 1, 1],
                                        'fsdp': [1, 1, 8, 1],
                                        'expert': [1, 1, 2, 4, 1],
                                        'loss': 8,
                                        'verl_dp': 8},
                             'label': 'world 8, shard 8, ep 4',
                             'rules': ['dense_shape',
                                       'fsdp_shape',
                                       'expert_shape',
                                       'loss_verl',
                                       'ep_not_in_product']},
                            {'args': [8],
                             'kwargs': {'pp': 2, 'dp_shard': 2, 'tp': 2},
                             'public': True,
                             'expect': {'dense': [2, 2, 1, 2],
                                        'fsdp': [2, 1, 2, 2],
                                        'expert': [2, 1, 4, 1, 1],
                                        'loss': 2,
                                        'verl_dp': 2},
                             'label': 'world 8, pp 2, shard 2, tp 2',
                             'rules': ['dense_shape', 'fsdp_shape', 'expert_shape', 'loss_verl']}],
                  'compare': 'exact',
                  'feedback': {'en': 'Resolve dp_shard=-1 first, then batch = rep*shard and fsdp = shard*cp; '
                                     'loss includes cp, verl_dp does not.',
                               'zh': '先解析 dp_shard=-1，再算 batch = rep*shard、fsdp = shard*cp；loss 含 cp，verl_dp '
                                     '不含。'}},
 'hidden_rows': {'calls': [{'args': [1],
                            'kwargs': {},
                            'public': False,
                            'expect': {'dense': [1, 1, 1, 1],
                                       'fsdp': [1, 1, 1, 1],
                                       'expert': [1, 1, 1, 1, 1],
                                       'loss': 1,
                                       'verl_dp': 1},
                            'rules': ['shard_resolve']},
                           {'args': [16],
                            'kwargs': {'dp_replicate': 2, 'cp': 2, 'tp': 2},
                            'public': False,
                            'expect': {'dense': [1, 4, 2, 2],
                                       'fsdp': [1, 2, 4, 2],
                                       'expert': [1, 2, 8, 1, 1],
                                       'loss': 8,
                                       'verl_dp': 4},
                            'rules': ['shard_resolve', 'fsdp_shape', 'loss_verl']},
                           {'args': [16],
                            'kwargs': {'pp': 4, 'tp': 2},
                            'public': False,
                            'expect': {'dense': [4, 2, 1, 2],
                                       'fsdp': [4, 1, 2, 2],
                                       'expert': [4, 1, 4, 1, 1],
                                       'loss': 2,
                                       'verl_dp': 2},
                            'rules': ['shard_resolve', 'dense_shape']},
                           {'args': [16],
                            'kwargs': {'dp_shard': 4, 'tp': 4, 'ep': 2, 'etp': 4},
                            'public': False,
                            'expect': {'dense': [1, 4, 1, 4],
                                       'fsdp': [1, 1, 4, 4],
                                       'expert': [1, 1, 2, 2, 4],
                                       'loss': 4,
                                       'verl_dp': 4},
                            'rules': ['expert_shape']},
                           {'args': [32],
                            'kwargs': {'dp_replicate': 2, 'dp_shard': 4, 'cp': 2, 'tp': 2, 'ep': 8},
                            'public': False,
                            'expect': {'dense': [1, 8, 2, 2],
                                       'fsdp': [1, 2, 8, 2],
                                       'expert': [1, 2, 2, 8, 1],
                                       'loss': 16,
                                       'verl_dp': 8},
                            'rules': ['expert_shape', 'ep_not_in_product', 'loss_verl']},
                           {'args': [8],
                            'kwargs': {'cp': 8},
                            'public': False,
                            'expect': {'dense': [1, 1, 8, 1],
                                       'fsdp': [1, 1, 8, 1],
                                       'expert': [1, 1, 8, 1, 1],
                                       'loss': 8,
                                       'verl_dp': 1},
                            'rules': ['shard_resolve', 'loss_verl']},
                           {'args': [4],
                            'kwargs': {'dp_shard': 4, 'etp': 2},
                            'public': False,
                            'expect': {'dense': [1, 4, 1, 1],
                                       'fsdp': [1, 1, 4, 1],
                                       'expert': [1, 1, 2, 1, 2],
                                       'loss': 4,
                                       'verl_dp': 4},
                            'rules': ['expert_shape']}],
                 'compare': 'exact',
                 'feedback': {'en': 'Hidden rows use world sizes 1-32 with HSDP, CP, TP, PP and EP together; '
                                    'remember efsdp = fsdp*tp/(etp*ep).',
                              'zh': '隐藏用例在 world 1-32 上组合 HSDP、CP、TP、PP、EP；注意 efsdp = fsdp*tp/(etp*ep)。'}},
 'invalid': {'calls': [{'args': [8],
                        'kwargs': {'dp_shard': 2, 'cp': 2},
                        'public': True,
                        'raises': 'ValueError',
                        'label': 'world 8, shard 2, cp 2 (4 != 8)',
                        'rules': ['product']},
                       {'args': [6],
                        'kwargs': {'cp': 4},
                        'public': False,
                        'raises': 'ValueError',
                        'rules': ['product']},
                       {'args': [8],
                        'kwargs': {'tp': 2, 'ep': 2, 'etp': 4},
                        'public': False,
                        'raises': 'ValueError',
                        'rules': ['etp_rule']},
                       {'args': [4],
                        'kwargs': {'dp_replicate': 0},
                        'public': False,
                        'raises': 'ValueError',
                        'rules': ['degree_lt_1']},
                       {'args': [8],
                        'kwargs': {'dp_shard': 3},
                        'public': False,
                        'raises': 'ValueError',
                        'rules': ['product']},
                       {'args': [2],
                        'kwargs': {'dp_shard': 2, 'ep': 4},
                        'public': False,
                        'raises': 'ValueError',
                        'rules': ['efsdp_whole']},
                       {'args': [6],
                        'kwargs': {'dp_shard': 6, 'ep': 4},
                        'public': False,
                        'raises': 'ValueError',
                        'rules': ['efsdp_whole']},
                       {'args': [8],
                        'kwargs': {'dp_shard': 8, 'tp': 1, 'ep': 3},
                        'public': False,
                        'raises': 'ValueError',
                        'rules': ['efsdp_whole']},
                       {'args': [8],
                        'kwargs': {'tp': 0},
                        'public': False,
                        'raises': 'ValueError',
                        'rules': ['degree_lt_1']},
                       {'args': [4],
                        'kwargs': {'dp_shard': 0},
                        'public': False,
                        'raises': 'ValueError',
                        'rules': ['degree_lt_1']},
                       {'args': [4],
                        'kwargs': {'ep': 0},
                        'public': False,
                        'raises': 'ValueError',
                        'rules': ['degree_lt_1']},
                       {'args': [4],
                        'kwargs': {'etp': 0},
                        'public': False,
                        'raises': 'ValueError',
                        'rules': ['degree_lt_1']},
                       {'args': [4],
                        'kwargs': {'cp': -1},
                        'public': False,
                        'raises': 'ValueError',
                        'rules': ['degree_lt_1']}],
             'compare': 'exact',
             'feedback': {'en': 'Raise ValueError for degrees < 1, a product that is not the world size (ep '
                                'excluded), etp not in {tp, 1} when ep > 1, and a fractional efsdp.',
                          'zh': '度数 < 1、乘积（不含 ep）不等于 world、ep > 1 时 etp 不是 tp 或 1、efsdp 非整数时都要抛出 '
                                'ValueError。'}}}

RULES = {'course_table': [{'id': 'shard_resolve',
                   'stated': '`dp_shard=-1` means `world // (dp_replicate·cp·tp·pp)`',
                   'hint': {'en': 'dp_shard=-1 (the default) is resolved first, to world // '
                                  '(dp_replicate*cp*tp*pp); every shape is built from the resolved value.',
                            'zh': 'dp_shard=-1（默认值）要先解析为 world // (dp_replicate*cp*tp*pp)；所有形状都用解析后的值计算。'}},
                  {'id': 'dense_shape',
                   'stated': 'dense (data loading) `(pp, batch=rep·shard, cp, tp)`',
                   'hint': {'en': 'The dense mesh is (pp, batch, cp, tp) with batch = dp_replicate*dp_shard.',
                            'zh': 'dense mesh 是 (pp, batch, cp, tp)，其中 batch = dp_replicate*dp_shard。'}},
                  {'id': 'fsdp_shape',
                   'stated': 'fsdp `(pp, rep, fsdp=shard·cp, tp)`',
                   'hint': {'en': 'The fsdp mesh is (pp, dp_replicate, fsdp, tp) with fsdp = dp_shard*cp: cp '
                                  'ranks join the FSDP dimension.',
                            'zh': 'fsdp mesh 是 (pp, dp_replicate, fsdp, tp)，其中 fsdp = dp_shard*cp：cp 的 rank '
                                  '并入 FSDP 维。'}},
                  {'id': 'expert_shape',
                   'stated': 'expert `(pp, rep, efsdp=fsdp·tp/(etp·ep), ep, etp)`',
                   'hint': {'en': 'The expert mesh is (pp, dp_replicate, efsdp, ep, etp) with efsdp = '
                                  'fsdp*tp/(etp*ep), tp included.',
                            'zh': 'expert mesh 是 (pp, dp_replicate, efsdp, ep, etp)，其中 efsdp = '
                                  'fsdp*tp/(etp*ep)，要包含 tp。'}},
                  {'id': 'loss_verl',
                   'stated': "the loss mesh has size batch·cp; verl's DP size is shard·rep (cp not included)",
                   'hint': {'en': 'loss = batch*cp, while verl_dp = dp_shard*dp_replicate leaves cp out.',
                            'zh': 'loss = batch*cp，而 verl_dp = dp_shard*dp_replicate 不含 cp。'}},
                  {'id': 'ep_not_in_product',
                   'stated': '**ep is not in the product.**',
                   'hint': {'en': 'ep is not a factor of the world size: it splits the efsdp dimension of '
                                  'the expert mesh instead.',
                            'zh': 'ep 不是 world 的因子：它切分的是 expert mesh 的 efsdp 维。'}}],
 'hidden_rows': [{'id': 'shard_resolve',
                  'stated': '`dp_shard=-1` means `world // (dp_replicate·cp·tp·pp)`',
                  'hint': {'en': 'dp_shard=-1 (the default) is resolved first, to world // '
                                 '(dp_replicate*cp*tp*pp); every shape is built from the resolved value.',
                           'zh': 'dp_shard=-1（默认值）要先解析为 world // (dp_replicate*cp*tp*pp)；所有形状都用解析后的值计算。'}},
                 {'id': 'dense_shape',
                  'stated': 'dense (data loading) `(pp, batch=rep·shard, cp, tp)`',
                  'hint': {'en': 'The dense mesh is (pp, batch, cp, tp) with batch = dp_replicate*dp_shard.',
                           'zh': 'dense mesh 是 (pp, batch, cp, tp)，其中 batch = dp_replicate*dp_shard。'}},
                 {'id': 'fsdp_shape',
                  'stated': 'fsdp `(pp, rep, fsdp=shard·cp, tp)`',
                  'hint': {'en': 'The fsdp mesh is (pp, dp_replicate, fsdp, tp) with fsdp = dp_shard*cp: cp '
                                 'ranks join the FSDP dimension.',
                           'zh': 'fsdp mesh 是 (pp, dp_replicate, fsdp, tp)，其中 fsdp = dp_shard*cp：cp 的 rank '
                                 '并入 FSDP 维。'}},
                 {'id': 'expert_shape',
                  'stated': 'expert `(pp, rep, efsdp=fsdp·tp/(etp·ep), ep, etp)`',
                  'hint': {'en': 'The expert mesh is (pp, dp_replicate, efsdp, ep, etp) with efsdp = '
                                 'fsdp*tp/(etp*ep), tp included.',
                           'zh': 'expert mesh 是 (pp, dp_replicate, efsdp, ep, etp)，其中 efsdp = '
                                 'fsdp*tp/(etp*ep)，要包含 tp。'}},
                 {'id': 'loss_verl',
                  'stated': "the loss mesh has size batch·cp; verl's DP size is shard·rep (cp not included)",
                  'hint': {'en': 'loss = batch*cp, while verl_dp = dp_shard*dp_replicate leaves cp out.',
                           'zh': 'loss = batch*cp，而 verl_dp = dp_shard*dp_replicate 不含 cp。'}},
                 {'id': 'ep_not_in_product',
                  'stated': '**ep is not in the product.**',
                  'hint': {'en': 'ep is not a factor of the world size: it splits the efsdp dimension of the '
                                 'expert mesh instead.',
                           'zh': 'ep 不是 world 的因子：它切分的是 expert mesh 的 efsdp 维。'}}],
 'invalid': [{'id': 'degree_lt_1',
              'stated': 'a degree < 1',
              'hint': {'en': 'A degree below 1 is invalid (dp_shard=-1 is the only special value) and raises '
                             'ValueError.',
                       'zh': '小于 1 的度数非法（只有 dp_shard=-1 是特殊值），要抛出 ValueError。'}},
             {'id': 'product',
              'stated': 'then `dp_replicate·dp_shard·cp·tp·pp == world` must hold',
              'hint': {'en': 'After resolving dp_shard, dp_replicate*dp_shard*cp*tp*pp must equal world (ep '
                             'excluded); otherwise raise ValueError.',
                       'zh': '解析 dp_shard 之后，dp_replicate*dp_shard*cp*tp*pp 必须等于 world（不含 ep），否则抛出 '
                             'ValueError。'}},
             {'id': 'etp_rule',
              'stated': 'with ep > 1, etp must equal tp or 1',
              'hint': {'en': 'With ep > 1, etp must be tp or 1; any other etp raises ValueError.',
                       'zh': 'ep > 1 时 etp 只能是 tp 或 1，其它值要抛出 ValueError。'}},
             {'id': 'efsdp_whole',
              'stated': 'efsdp must be a whole number',
              'hint': {'en': 'efsdp = fsdp*tp/(etp*ep) must be a whole number: when etp*ep does not divide '
                             'fsdp*tp, raise ValueError instead of rounding.',
                       'zh': 'efsdp = fsdp*tp/(etp*ep) 必须是整数：etp*ep 不能整除 fsdp*tp 时要抛出 ValueError，不要取整。'}}]}

MISTAKES = [{'name': 'ep_in_product',
  'score': 8.4762,
  'fails': {'course_table': 'world 8, shard 8, ep 4'},
  'patch': [{'find': '    if dp_shard < 1 or dp_replicate * dp_shard * cp * tp * pp != world:',
             'replace': '    if dp_shard < 1 or dp_replicate * dp_shard * cp * tp * pp * ep != world:'}]},
 {'name': 'loss_without_cp',
  'score': 7.381,
  'fails': {'course_table': 'world 2, shard 1, cp 2'},
  'patch': [{'find': '        "loss": batch * cp,', 'replace': '        "loss": batch,'}]},
 {'name': 'no_validation',
  'score': 9.0769,
  'fails': {'invalid': 'world 8, shard 2, cp 2'},
  'patch': [{'find': '        dp_shard = world // (dp_replicate * cp * tp * pp)\n'
                     '    if dp_shard < 1 or dp_replicate * dp_shard * cp * tp * pp != world:\n'
                     '        raise ValueError(f"Invalid parallel dims: '
                     '{dp_replicate}*{dp_shard}*{cp}*{tp}*{pp} != {world}")\n'
                     '    if ep > 1 and etp not in (tp, 1):',
             'replace': '        dp_shard = world // (dp_replicate * cp * tp * pp)\n'
                        '    if ep > 1 and etp not in (tp, 1):'}]},
 {'name': 'verl_dp_with_cp',
  'score': 7.381,
  'fails': {'course_table': 'world 8, shard -1, cp 2'},
  'patch': [{'find': '        "verl_dp": batch,', 'replace': '        "verl_dp": batch * cp,'}]},
 {'name': 'efsdp_without_tp',
  'score': 6.9524,
  'fails': {'hidden_rows': 'efsdp = fsdp*tp/(etp*ep)'},
  'patch': [{'find': '    efsdp = fsdp * tp // (etp * ep)',
             'replace': '    efsdp = fsdp // (etp * ep)  # tp left out'}]},
 {'name': 'efsdp_floor',
  'score': 9.3077,
  'fails': {'invalid': 'efsdp'},
  'patch': [{'find': '    if (fsdp * tp) % (etp * ep):\n'
                     '        raise ValueError("efsdp = fsdp*tp/(etp*ep) is not a whole number")\n',
             'replace': ''}]}]

EQUIVALENT = [{'mutant': 'const_zero:ab6eba23:1',
  'reason': 'dp_shard < 0 instead of dp_shard < 1 differs only at dp_shard = 0, where '
            'dp_replicate*0*cp*tp*pp = 0 != world (world >= 1 was checked first) raises the same ValueError'}]
