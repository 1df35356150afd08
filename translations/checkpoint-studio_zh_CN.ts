<?xml version='1.0' encoding='utf-8'?>
<TS version="2.1" language="zh_CN">
<context>
    <name>Preferences</name>
    <message>
        <location filename="../app/preferences.cpp" line="22" />
        <source>S3 endpoint URL</source>
        <translation>S3 端点 URL</translation>
    </message>
    <message>
        <location filename="../app/preferences.cpp" line="23" />
        <source>AWS profile</source>
        <translation>AWS 配置文件（profile）</translation>
    </message>
    <message>
        <location filename="../app/preferences.cpp" line="24" />
        <source>AWS region</source>
        <translation>AWS 区域</translation>
    </message>
    <message>
        <location filename="../app/preferences.cpp" line="25" />
        <source>Hugging Face endpoint</source>
        <translation>Hugging Face 端点</translation>
    </message>
    <message>
        <location filename="../app/preferences.cpp" line="26" />
        <source>Hugging Face token file</source>
        <translation>Hugging Face 令牌文件</translation>
    </message>
    <message>
        <location filename="../app/preferences.cpp" line="27" />
        <source>Google credentials file</source>
        <translation>Google 凭据文件</translation>
    </message>
</context>
<context>
    <name>ReplacePrompt</name>
    <message numerus="yes">
        <location filename="../app/replace_prompt.cpp" line="24" />
        <source>%1 already holds %n file(s). Replace the earlier output in it?

The files it wrote are removed and the new ones put in their place in one step; other files are kept.</source>
        <translation><numerusform>%1 中已有 %n 个文件。要替换其中先前的输出吗？

先前写入的文件会被删除，新文件一步替换到位；其他文件保留。</numerusform></translation>
    </message>
    <message>
        <location filename="../app/replace_prompt.cpp" line="30" />
        <source>Replace the output?</source>
        <translation>替换输出？</translation>
    </message>
</context>
<context>
    <name>ckpt::app::BloatView</name>
    <message>
        <location filename="../app/bloat_view.cpp" line="93" />
        <source>model weights</source>
        <translation>模型权重</translation>
    </message>
    <message>
        <location filename="../app/bloat_view.cpp" line="95" />
        <source>fp32 masters</source>
        <translation>fp32 主权重</translation>
    </message>
    <message>
        <location filename="../app/bloat_view.cpp" line="97" />
        <source>exp_avg</source>
        <translation>exp_avg</translation>
    </message>
    <message>
        <location filename="../app/bloat_view.cpp" line="99" />
        <source>exp_avg_sq</source>
        <translation>exp_avg_sq</translation>
    </message>
    <message>
        <location filename="../app/bloat_view.cpp" line="101" />
        <source>other optimizer state</source>
        <translation>其他优化器状态</translation>
    </message>
    <message>
        <location filename="../app/bloat_view.cpp" line="103" />
        <location filename="../app/bloat_view.cpp" line="105" />
        <source>other</source>
        <translation>其他</translation>
    </message>
    <message>
        <location filename="../app/bloat_view.cpp" line="122" />
        <source>Slim...</source>
        <translation>精简...</translation>
    </message>
    <message>
        <location filename="../app/bloat_view.cpp" line="123" />
        <source>Write a copy in which every storage keeps only the bytes its views reach</source>
        <translation>写出一份副本，其中每个存储只保留其视图用到的字节</translation>
    </message>
    <message>
        <location filename="../app/bloat_view.cpp" line="131" />
        <source>Cancel</source>
        <translation>取消</translation>
    </message>
    <message>
        <location filename="../app/bloat_view.cpp" line="134" />
        <source>Files, most wasted first</source>
        <translation>文件（浪费最多的在前）</translation>
    </message>
    <message>
        <location filename="../app/bloat_view.cpp" line="141" />
        <source>Bytes by role</source>
        <translation>按用途划分的字节</translation>
    </message>
    <message>
        <location filename="../app/bloat_view.cpp" line="238" />
        <source>Storages</source>
        <translation>存储</translation>
    </message>
    <message>
        <location filename="../app/bloat_view.cpp" line="248" />
        <source>Select a file, a tag or a checkpoint to see where its bytes go.</source>
        <translation>选择一个文件、标签或检查点，查看其字节的去向。</translation>
    </message>
    <message>
        <location filename="../app/bloat_view.cpp" line="256" />
        <source>&lt;b&gt;%1&lt;/b&gt;: reading...</source>
        <translation>&lt;b&gt;%1&lt;/b&gt;：正在读取...</translation>
    </message>
    <message>
        <location filename="../app/bloat_view.cpp" line="257" />
        <location filename="../app/bloat_view.cpp" line="409" />
        <source>Reading %1</source>
        <translation>正在读取 %1</translation>
    </message>
    <message>
        <location filename="../app/bloat_view.cpp" line="307" />
        <source>&lt;b&gt;%1&lt;/b&gt;: cancelled.</source>
        <translation>&lt;b&gt;%1&lt;/b&gt;：已取消。</translation>
    </message>
    <message>
        <location filename="../app/bloat_view.cpp" line="308" />
        <source>&lt;b&gt;%1&lt;/b&gt;: %2</source>
        <translation>&lt;b&gt;%1&lt;/b&gt;：%2</translation>
    </message>
    <message numerus="yes">
        <location filename="../app/bloat_view.cpp" line="354" />
        <source>&lt;b&gt;%1&lt;/b&gt;: %n file(s), %2 on disk.</source>
        <translation><numerusform>&lt;b&gt;%1&lt;/b&gt;：%n 个文件，磁盘占用 %2。</numerusform></translation>
    </message>
    <message>
        <location filename="../app/bloat_view.cpp" line="357" />
        <source>No torch.save file here: nothing to slim.</source>
        <translation>这里没有 torch.save 文件：无可精简。</translation>
    </message>
    <message>
        <location filename="../app/bloat_view.cpp" line="360" />
        <source>&lt;span style="color:#d64f45"&gt;&lt;b&gt;%1 wasted&lt;/b&gt;&lt;/span&gt; (%2% of the storage bytes): no tensor view reaches them. Slim writes a copy without them (gaps inside a strided view stay, so that torch.load gives the same strides).</source>
        <translation>&lt;span style="color:#d64f45"&gt;&lt;b&gt;浪费 %1&lt;/b&gt;&lt;/span&gt;（占存储字节的 %2%）：没有任何张量视图用到这些字节。精简会写出不含它们的副本（带步长的视图内部的空隙会保留，以便 torch.load 得到相同的步长）。</translation>
    </message>
    <message>
        <location filename="../app/bloat_view.cpp" line="366" />
        <source>Nothing wasted: every storage byte is reached by a view.</source>
        <translation>没有浪费：每个存储字节都被某个视图用到。</translation>
    </message>
    <message>
        <location filename="../app/bloat_view.cpp" line="381" />
        <source>Storages: no torch.save file</source>
        <translation>存储：没有 torch.save 文件</translation>
    </message>
    <message>
        <location filename="../app/bloat_view.cpp" line="396" />
        <source>%1 is not a torch.save file: it has no storages.</source>
        <translation>%1 不是 torch.save 文件：没有存储。</translation>
    </message>
    <message>
        <location filename="../app/bloat_view.cpp" line="408" />
        <source>Storages of %1: reading...</source>
        <translation>%1 的存储：正在读取...</translation>
    </message>
    <message>
        <location filename="../app/bloat_view.cpp" line="423" />
        <source>Storages of %1: cancelled.</source>
        <translation>%1 的存储：已取消。</translation>
    </message>
    <message>
        <location filename="../app/bloat_view.cpp" line="424" />
        <source>Storages of %1: %2</source>
        <translation>%1 的存储：%2</translation>
    </message>
    <message numerus="yes">
        <location filename="../app/bloat_view.cpp" line="432" />
        <source>Storages of %1: %n storage(s), %2 of %3 wasted</source>
        <translation><numerusform>%1 的存储：%n 个存储，%3 中浪费 %2</numerusform></translation>
    </message>
</context>
<context>
    <name>ckpt::app::CompareDialog</name>
    <message>
        <location filename="../app/compare_window.cpp" line="543" />
        <location filename="../app/compare_window.cpp" line="555" />
        <source>Compare</source>
        <translation>比较</translation>
    </message>
    <message>
        <location filename="../app/compare_window.cpp" line="569" />
        <source>Checkpoint folder, tag folder or file</source>
        <translation>检查点文件夹、标签文件夹或文件</translation>
    </message>
    <message>
        <location filename="../app/compare_window.cpp" line="570" />
        <source>Folder...</source>
        <translation>文件夹...</translation>
    </message>
    <message>
        <location filename="../app/compare_window.cpp" line="571" />
        <source>File...</source>
        <translation>文件...</translation>
    </message>
    <message>
        <location filename="../app/compare_window.cpp" line="573" />
        <source>The tag of this side, when it holds several</source>
        <translation>此侧的标签（当它包含多个标签时）</translation>
    </message>
    <message>
        <location filename="../app/compare_window.cpp" line="577" />
        <source>Checkpoint or tag folder</source>
        <translation>检查点或标签文件夹</translation>
    </message>
    <message>
        <location filename="../app/compare_window.cpp" line="581" />
        <source>Checkpoint file</source>
        <translation>检查点文件</translation>
    </message>
    <message>
        <location filename="../app/compare_window.cpp" line="547" />
        <source>A:</source>
        <translation>A：</translation>
    </message>
    <message>
        <location filename="../app/compare_window.cpp" line="547" />
        <source>B:</source>
        <translation>B：</translation>
    </message>
    <message>
        <location filename="../app/compare_window.cpp" line="550" />
        <source>Compare the optimizer moments too (exp_avg, exp_avg_sq)</source>
        <translation>同时比较优化器矩（exp_avg、exp_avg_sq）</translation>
    </message>
</context>
<context>
    <name>ckpt::app::CompareHeatmap</name>
    <message>
        <location filename="../app/compare_heatmap.cpp" line="153" />
        <source>No tensors compared yet</source>
        <translation>尚未比较任何张量</translation>
    </message>
    <message>
        <location filename="../app/compare_heatmap.cpp" line="205" />
        <source>rel. L2 change</source>
        <translation>相对 L2 变化</translation>
    </message>
    <message>
        <location filename="../app/compare_heatmap.cpp" line="212" />
        <location filename="../app/compare_heatmap.cpp" line="213" />
        <location filename="../app/compare_heatmap.cpp" line="251" />
        <source>identical</source>
        <translation>相同</translation>
    </message>
    <message>
        <location filename="../app/compare_heatmap.cpp" line="217" />
        <location filename="../app/compare_heatmap.cpp" line="218" />
        <source>not comparable</source>
        <translation>无法比较</translation>
    </message>
    <message>
        <location filename="../app/compare_heatmap.cpp" line="224" />
        <source>dtype changed</source>
        <translation>dtype 已改变</translation>
    </message>
    <message>
        <location filename="../app/compare_heatmap.cpp" line="253" />
        <source>rel. L2 %1</source>
        <translation>相对 L2 %1</translation>
    </message>
</context>
<context>
    <name>ckpt::app::CompareHistograms</name>
    <message>
        <location filename="../app/compare_histograms.cpp" line="145" />
        <source>Log counts</source>
        <translation>对数计数</translation>
    </message>
    <message>
        <location filename="../app/compare_histograms.cpp" line="146" />
        <source>Count axis on a log scale: rare values (outliers) stay visible</source>
        <translation>计数轴使用对数刻度：少见的值（离群值）仍然可见</translation>
    </message>
    <message>
        <location filename="../app/compare_histograms.cpp" line="208" />
        <source>A</source>
        <translation>A</translation>
    </message>
    <message>
        <location filename="../app/compare_histograms.cpp" line="209" />
        <source>B</source>
        <translation>B</translation>
    </message>
    <message>
        <location filename="../app/compare_histograms.cpp" line="212" />
        <location filename="../app/compare_histograms.cpp" line="214" />
        <source>a - b</source>
        <translation>a - b</translation>
    </message>
    <message>
        <location filename="../app/compare_histograms.cpp" line="213" />
        <source>value</source>
        <translation>数值</translation>
    </message>
    <message>
        <location filename="../app/compare_histograms.cpp" line="217" />
        <source>Select a tensor to see its values</source>
        <translation>选择一个张量以查看其数值</translation>
    </message>
    <message>
        <location filename="../app/compare_histograms.cpp" line="224" />
        <source>Not compared: the tensor is only on one side, or its shape differs.</source>
        <translation>未比较：该张量只在一侧存在，或形状不同。</translation>
    </message>
    <message>
        <location filename="../app/compare_histograms.cpp" line="236" />
        <source>dtype</source>
        <translation>数据类型</translation>
    </message>
    <message>
        <location filename="../app/compare_histograms.cpp" line="238" />
        <source>min</source>
        <translation>最小值</translation>
    </message>
    <message>
        <location filename="../app/compare_histograms.cpp" line="238" />
        <source>max</source>
        <translation>最大值</translation>
    </message>
    <message>
        <location filename="../app/compare_histograms.cpp" line="239" />
        <source>mean</source>
        <translation>均值</translation>
    </message>
    <message>
        <location filename="../app/compare_histograms.cpp" line="239" />
        <source>std</source>
        <translation>标准差</translation>
    </message>
    <message>
        <location filename="../app/compare_histograms.cpp" line="240" />
        <source>L2 norm</source>
        <translation>L2 范数</translation>
    </message>
    <message>
        <location filename="../app/compare_histograms.cpp" line="241" />
        <source>zeros</source>
        <translation>零值</translation>
    </message>
    <message>
        <location filename="../app/compare_histograms.cpp" line="242" />
        <source>NaN / Inf</source>
        <translation>NaN / Inf</translation>
    </message>
    <message>
        <location filename="../app/compare_histograms.cpp" line="247" />
        <source>&lt;p&gt;max |a-b| %1 &amp;nbsp; rel. L2 %2 &amp;nbsp; cosine %3&lt;/p&gt;</source>
        <translation>&lt;p&gt;最大 |a-b| %1 &amp;nbsp; 相对 L2 %2 &amp;nbsp; 余弦 %3&lt;/p&gt;</translation>
    </message>
    <message>
        <location filename="../app/compare_histograms.cpp" line="251" />
        <source>&lt;p&gt;bitwise equal %1 of %2&lt;/p&gt;</source>
        <translation>&lt;p&gt;逐位相等 %1 / %2&lt;/p&gt;</translation>
    </message>
    <message>
        <location filename="../app/compare_histograms.cpp" line="253" />
        <source>&lt;p&gt;%1 elements compared across dtypes (%2 and %3, widened to float64)&lt;/p&gt;</source>
        <translation>&lt;p&gt;跨 dtype 比较了 %1 个元素（%2 与 %3，扩展为 float64）&lt;/p&gt;</translation>
    </message>
</context>
<context>
    <name>ckpt::app::CompareModel</name>
    <message>
        <location filename="../app/compare_model.cpp" line="52" />
        <source>identical</source>
        <translation>相同</translation>
    </message>
    <message>
        <location filename="../app/compare_model.cpp" line="54" />
        <source>changed</source>
        <translation>有变化</translation>
    </message>
    <message>
        <location filename="../app/compare_model.cpp" line="56" />
        <source>only in A</source>
        <translation>仅在 A 中</translation>
    </message>
    <message>
        <location filename="../app/compare_model.cpp" line="58" />
        <source>only in B</source>
        <translation>仅在 B 中</translation>
    </message>
    <message>
        <location filename="../app/compare_model.cpp" line="60" />
        <source>shape or dtype changed</source>
        <translation>形状或数据类型不同</translation>
    </message>
    <message>
        <location filename="../app/compare_model.cpp" line="62" />
        <source>dtype changed</source>
        <translation>dtype 已改变</translation>
    </message>
    <message>
        <location filename="../app/compare_model.cpp" line="132" />
        <source>A: %1</source>
        <translation>A：%1</translation>
    </message>
    <message>
        <location filename="../app/compare_model.cpp" line="134" />
        <source>B: %1</source>
        <translation>B：%1</translation>
    </message>
    <message>
        <location filename="../app/compare_model.cpp" line="145" />
        <source>tied to %1</source>
        <translation>绑定到 %1</translation>
    </message>
    <message>
        <location filename="../app/compare_model.cpp" line="148" />
        <source>dtype changed: %1 → %2</source>
        <translation>dtype 已改变：%1 → %2</translation>
    </message>
    <message>
        <location filename="../app/compare_model.cpp" line="175" />
        <source>||a - b|| / ||a||</source>
        <translation>||a - b|| / ||a||</translation>
    </message>
    <message>
        <location filename="../app/compare_model.cpp" line="176" />
        <source>a.b / (||a|| ||b||)</source>
        <translation>a.b / (||a|| ||b||)</translation>
    </message>
    <message>
        <location filename="../app/compare_model.cpp" line="177" />
        <source>Share of elements whose bits are equal</source>
        <translation>比特完全相同的元素所占比例</translation>
    </message>
    <message>
        <location filename="../app/compare_model.cpp" line="172" />
        <source>Tensor</source>
        <translation>张量</translation>
    </message>
    <message>
        <location filename="../app/compare_model.cpp" line="173" />
        <source>Status</source>
        <translation>状态</translation>
    </message>
    <message>
        <location filename="../app/compare_model.cpp" line="174" />
        <source>max |a-b|</source>
        <translation>最大 |a-b|</translation>
    </message>
    <message>
        <location filename="../app/compare_model.cpp" line="175" />
        <source>rel. L2</source>
        <translation>相对 L2</translation>
    </message>
    <message>
        <location filename="../app/compare_model.cpp" line="176" />
        <source>cosine</source>
        <translation>余弦</translation>
    </message>
    <message>
        <location filename="../app/compare_model.cpp" line="177" />
        <source>bitwise equal</source>
        <translation>按位相同</translation>
    </message>
    <message>
        <location filename="../app/compare_model.cpp" line="178" />
        <source>mean A</source>
        <translation>A 均值</translation>
    </message>
    <message>
        <location filename="../app/compare_model.cpp" line="179" />
        <source>mean B</source>
        <translation>B 均值</translation>
    </message>
    <message>
        <location filename="../app/compare_model.cpp" line="180" />
        <source>std A</source>
        <translation>A 标准差</translation>
    </message>
    <message>
        <location filename="../app/compare_model.cpp" line="181" />
        <source>std B</source>
        <translation>B 标准差</translation>
    </message>
</context>
<context>
    <name>ckpt::app::CompareWindow</name>
    <message>
        <location filename="../app/compare_window.cpp" line="99" />
        <source>Compare - Checkpoint Studio</source>
        <translation>比较 - Checkpoint Studio</translation>
    </message>
    <message>
        <location filename="../app/compare_window.cpp" line="133" />
        <source>Cancel</source>
        <translation>取消</translation>
    </message>
    <message>
        <location filename="../app/compare_window.cpp" line="147" />
        <source>Filter by name (wildcards)</source>
        <translation>按名称筛选（通配符）</translation>
    </message>
    <message>
        <location filename="../app/compare_window.cpp" line="150" />
        <source>All tensors</source>
        <translation>全部张量</translation>
    </message>
    <message>
        <location filename="../app/compare_window.cpp" line="151" />
        <source>All but identical</source>
        <translation>除相同以外的全部</translation>
    </message>
    <message>
        <location filename="../app/compare_window.cpp" line="156" />
        <source>Optimizer moments</source>
        <translation>优化器矩</translation>
    </message>
    <message>
        <location filename="../app/compare_window.cpp" line="157" />
        <source>Compare each parameter's optimizer moments too (exp_avg and exp_avg_sq, as &lt;param&gt;/exp_avg): the comparison runs again</source>
        <translation>同时比较每个参数的优化器矩（exp_avg 和 exp_avg_sq，记为 &lt;param&gt;/exp_avg）：比较将重新运行</translation>
    </message>
    <message>
        <location filename="../app/compare_window.cpp" line="159" />
        <source>Export...</source>
        <translation>导出...</translation>
    </message>
    <message>
        <location filename="../app/compare_window.cpp" line="160" />
        <source>Save the table as CSV or JSON</source>
        <translation>将表格保存为 CSV 或 JSON</translation>
    </message>
    <message>
        <location filename="../app/compare_window.cpp" line="211" />
        <source>&amp;Comparison</source>
        <translation>比较(&amp;C)</translation>
    </message>
    <message>
        <location filename="../app/compare_window.cpp" line="212" />
        <source>&amp;Compare Other Sides...</source>
        <translation>比较其他两侧(&amp;C)...</translation>
    </message>
    <message>
        <location filename="../app/compare_window.cpp" line="213" />
        <source>&amp;Export Table...</source>
        <translation>导出表格(&amp;E)...</translation>
    </message>
    <message>
        <location filename="../app/compare_window.cpp" line="215" />
        <source>C&amp;lose</source>
        <translation>关闭(&amp;L)</translation>
    </message>
    <message>
        <location filename="../app/compare_window.cpp" line="283" />
        <source>%1 (tag %2)</source>
        <translation>%1（标签 %2）</translation>
    </message>
    <message>
        <location filename="../app/compare_window.cpp" line="286" />
        <location filename="../app/compare_window.cpp" line="392" />
        <source>&lt;b&gt;A&lt;/b&gt; %1&lt;br&gt;&lt;b&gt;B&lt;/b&gt; %2</source>
        <translation>&lt;b&gt;A&lt;/b&gt; %1&lt;br&gt;&lt;b&gt;B&lt;/b&gt; %2</translation>
    </message>
    <message>
        <location filename="../app/compare_window.cpp" line="287" />
        <source>Reading both sides...</source>
        <translation>正在读取两侧...</translation>
    </message>
    <message>
        <location filename="../app/compare_window.cpp" line="293" />
        <source>%1 vs %2 - Compare</source>
        <translation>%1 与 %2 - 比较</translation>
    </message>
    <message>
        <location filename="../app/compare_window.cpp" line="295" />
        <location filename="../app/compare_window.cpp" line="325" />
        <source>Opening</source>
        <translation>正在打开</translation>
    </message>
    <message>
        <location filename="../app/compare_window.cpp" line="315" />
        <source>Cancelling...</source>
        <translation>正在取消...</translation>
    </message>
    <message>
        <location filename="../app/compare_window.cpp" line="353" />
        <source>&lt;b&gt;Comparison failed:&lt;/b&gt; %1</source>
        <translation>&lt;b&gt;比较失败：&lt;/b&gt;%1</translation>
    </message>
    <message numerus="yes">
        <location filename="../app/compare_window.cpp" line="359" />
        <source>&lt;b&gt;Cancelled&lt;/b&gt; after %n tensor(s). </source>
        <translation><numerusform>&lt;b&gt;已取消&lt;/b&gt;，已比较 %n 个张量。</numerusform></translation>
    </message>
    <message>
        <location filename="../app/compare_window.cpp" line="398" />
        <source>Warning: %1</source>
        <translation>警告：%1</translation>
    </message>
    <message>
        <location filename="../app/compare_window.cpp" line="400" />
        <source>Computed on %1 in %2 s</source>
        <translation>在 %1 上计算，用时 %2 秒</translation>
    </message>
    <message numerus="yes">
        <location filename="../app/compare_window.cpp" line="427" />
        <source>&lt;b&gt;%n tensor(s)&lt;/b&gt;: </source>
        <translation><numerusform>&lt;b&gt;%n 个张量&lt;/b&gt;：</numerusform></translation>
    </message>
    <message>
        <location filename="../app/compare_window.cpp" line="428" />
        <source>%1 changed, %2 identical, %3 only in A, %4 only in B, %5 dtype changed (compared), %6 shape or dtype changed (not compared)</source>
        <translation>%1 个已改变，%2 个相同，%3 个仅在 A 中，%4 个仅在 B 中，%5 个 dtype 已改变（已比较），%6 个形状或 dtype 已改变（未比较）</translation>
    </message>
    <message numerus="yes">
        <location filename="../app/compare_window.cpp" line="436" />
        <source>, %n tied alias(es) listed beside the tensor each ties to</source>
        <translation><numerusform>，%n 个绑定别名列在各自绑定的张量旁</numerusform></translation>
    </message>
    <message numerus="yes">
        <location filename="../app/compare_window.cpp" line="490" />
        <source>Saved %1: %n row(s) as shown (filter and sort applied)</source>
        <translation><numerusform>已保存 %1：按所示保存 %n 行（已应用筛选和排序）</numerusform></translation>
    </message>
    <message>
        <location filename="../app/compare_window.cpp" line="437" />
        <source>. Largest relative change: %1</source>
        <translation>。相对变化最大：%1</translation>
    </message>
    <message>
        <location filename="../app/compare_window.cpp" line="478" />
        <location filename="../app/compare_window.cpp" line="485" />
        <source>Export comparison</source>
        <translation>导出比较结果</translation>
    </message>
    <message>
        <location filename="../app/compare_window.cpp" line="479" />
        <source>CSV (*.csv);;JSON (*.json)</source>
        <translation>CSV (*.csv);;JSON (*.json)</translation>
    </message>
    <message>
        <location filename="../app/compare_window.cpp" line="486" />
        <source>Cannot write %1: %2</source>
        <translation>无法写入 %1：%2</translation>
    </message>
</context>
<context>
    <name>ckpt::app::DetailsPane</name>
    <message>
        <location filename="../app/details_pane.cpp" line="76" />
        <source>No data to read for this tensor.</source>
        <translation>此张量没有可读取的数据。</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="78" />
        <source>This dtype has no statistics.</source>
        <translation>此数据类型没有统计信息。</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="97" />
        <source>First values: %1
min %2  max %3  mean %4  std %5
zeros %6  NaN %7  Inf %8</source>
        <translation>前几个值：%1
最小 %2  最大 %3  均值 %4  标准差 %5
零 %6  NaN %7  Inf %8</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="109" />
        <source>Could not compute: %1</source>
        <translation>无法计算：%1</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="122" />
        <source>Rank</source>
        <translation>Rank</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="53" />
        <location filename="../app/details_pane.cpp" line="122" />
        <source>File</source>
        <translation>文件</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="122" />
        <source>Offset</source>
        <translation>偏移</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="122" />
        <source>Length</source>
        <translation>长度</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="122" />
        <source>Padding</source>
        <translation>填充</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="130" />
        <source>Search the configuration</source>
        <translation>搜索配置</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="133" />
        <source>Show values and statistics</source>
        <translation>显示数值和统计</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="204" />
        <source>&lt;p&gt;Select an item to see its details.&lt;/p&gt;</source>
        <translation>&lt;p&gt;选择一个项目以查看详细信息。&lt;/p&gt;</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="208" />
        <source>Kind</source>
        <translation>类型</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="210" />
        <source>dtype</source>
        <translation>数据类型</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="210" />
        <source>Shape</source>
        <translation>形状</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="211" />
        <source>Elements</source>
        <translation>元素数</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="212" />
        <source>Bytes</source>
        <translation>字节</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="47" />
        <source>Stride</source>
        <translation>步长</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="48" />
        <source>Storage</source>
        <translation>存储</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="49" />
        <source>record %1, offset %2, %3</source>
        <translation>记录 %1，偏移 %2，%3</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="48" />
        <source>none</source>
        <translation>无</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="58" />
        <source>Shares storage with</source>
        <translation>与以下张量共享存储</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="255" />
        <source>Tied to</source>
        <translation>绑定到</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="256" />
        <source>Flat group</source>
        <translation>扁平分组</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="277" />
        <source>Optimizer state</source>
        <translation>优化器状态</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="222" />
        <source>Value</source>
        <translation>值</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="223" />
        <source>Error</source>
        <translation>错误</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="298" />
        <source>Computing...</source>
        <translation>正在计算...</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="35" />
        <source>tag</source>
        <translation>标签</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="36" />
        <source>tag (latest)</source>
        <translation>标签（最新）</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="37" />
        <source>ds_config</source>
        <translation>ds_config 配置</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="38" />
        <source>files</source>
        <translation>文件</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="39" />
        <source>parameters</source>
        <translation>参数</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="40" />
        <source>parameter</source>
        <translation>参数</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="41" />
        <source>parameter (frozen)</source>
        <translation>参数（冻结）</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="42" />
        <source>tied parameter</source>
        <translation>绑定参数</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="43" />
        <source>buffer</source>
        <translation>缓冲区</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="44" />
        <source>optimizer state</source>
        <translation>优化器状态</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="45" />
        <source>tensor</source>
        <translation>张量</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="46" />
        <source>other tensor</source>
        <translation>其他张量</translation>
    </message>
</context>
<context>
    <name>ckpt::app::ExportDialog</name>
    <message>
        <location filename="../app/export_dialog.cpp" line="66" />
        <source>Leave out frozen parameters</source>
        <translation>不包含冻结参数</translation>
    </message>
    <message>
        <location filename="../app/export_dialog.cpp" line="68" />
        <source>Leave out tensors safetensors cannot hold (complex, quantized)</source>
        <translation>不包含 safetensors 无法保存的张量（复数、量化）</translation>
    </message>
    <message>
        <location filename="../app/export_dialog.cpp" line="70" />
        <source>Browse...</source>
        <translation>浏览...</translation>
    </message>
    <message>
        <location filename="../app/export_dialog.cpp" line="74" />
        <source>File</source>
        <translation>文件</translation>
    </message>
    <message>
        <location filename="../app/export_dialog.cpp" line="74" />
        <source>Checkpoint</source>
        <translation>检查点</translation>
    </message>
    <message>
        <location filename="../app/export_dialog.cpp" line="87" />
        <location filename="../app/export_dialog.cpp" line="117" />
        <source>Output file</source>
        <translation>输出文件</translation>
    </message>
    <message>
        <location filename="../app/export_dialog.cpp" line="90" />
        <source>Tag</source>
        <translation>标签</translation>
    </message>
    <message>
        <location filename="../app/export_dialog.cpp" line="92" />
        <source>Format</source>
        <translation>格式</translation>
    </message>
    <message>
        <location filename="../app/export_dialog.cpp" line="93" />
        <source>dtype</source>
        <translation>数据类型</translation>
    </message>
    <message>
        <location filename="../app/export_dialog.cpp" line="94" />
        <source>Largest shard</source>
        <translation>最大分片</translation>
    </message>
    <message>
        <location filename="../app/export_dialog.cpp" line="96" />
        <location filename="../app/export_dialog.cpp" line="119" />
        <source>Output folder</source>
        <translation>输出文件夹</translation>
    </message>
    <message>
        <location filename="../app/export_dialog.cpp" line="105" />
        <source>Export</source>
        <translation>导出</translation>
    </message>
    <message>
        <location filename="../app/export_dialog.cpp" line="105" />
        <source>Open folder</source>
        <translation>打开文件夹</translation>
    </message>
    <message>
        <location filename="../app/export_dialog.cpp" line="118" />
        <source>safetensors (*.safetensors)</source>
        <translation>safetensors (*.safetensors)</translation>
    </message>
    <message>
        <location filename="../app/export_dialog.cpp" line="141" />
        <source>Export %1 to safetensors</source>
        <translation>将 %1 导出为 safetensors</translation>
    </message>
    <message>
        <location filename="../app/export_dialog.cpp" line="142" />
        <source>Export model: %1 of %2</source>
        <translation>导出模型：%2 的 %1</translation>
    </message>
    <message>
        <location filename="../app/export_dialog.cpp" line="159" />
        <source>This tag cannot be read, so it has no model to export: %1</source>
        <translation>无法读取此标签，因此没有可导出的模型：%1</translation>
    </message>
    <message>
        <location filename="../app/export_dialog.cpp" line="169" />
        <source>The window now shows %1; this export still reads the checkpoint above.</source>
        <translation>窗口现在显示 %1；此导出仍读取上面的检查点。</translation>
    </message>
    <message>
        <location filename="../app/export_dialog.cpp" line="190" />
        <source>Compute: %1</source>
        <translation>计算设备：%1</translation>
    </message>
    <message numerus="yes">
        <location filename="../app/export_dialog.cpp" line="194" />
        <source>Wrote %n file(s) to %1 in %2 s.</source>
        <translation><numerusform>已将 %n 个文件写入 %1，用时 %2 秒。</numerusform></translation>
    </message>
    <message>
        <location filename="../app/export_dialog.cpp" line="317" />
        <source>Export a damaged tag?</source>
        <translation>导出已损坏的标签？</translation>
    </message>
    <message numerus="yes">
        <location filename="../app/export_dialog.cpp" line="318" />
        <source>Verify found this tag damaged: %n damaged or missing file(s), and %1 problem(s) beyond one file. An export of it may hold wrong values.

Export anyway?</source>
        <translation><numerusform>校验发现此标签已损坏：%n 个文件损坏或缺失，另有 %1 个超出单个文件的问题。导出结果可能含有错误的数值。

仍要导出吗？</numerusform></translation>
    </message>
    <message>
        <location filename="../app/export_dialog.cpp" line="324" />
        <source>Nothing written: Verify found this tag damaged.</source>
        <translation>未写入任何内容：校验发现此标签已损坏。</translation>
    </message>
    <message>
        <location filename="../app/export_dialog.cpp" line="105" />
        <source>Export failed</source>
        <translation>导出失败</translation>
    </message>
    <message>
        <location filename="../app/export_dialog.cpp" line="58" />
        <source>as the checkpoint exports</source>
        <translation>按检查点的默认方式</translation>
    </message>
    <message>
        <location filename="../app/export_dialog.cpp" line="62" />
        <source>Floating tensors' type in the export. "As the checkpoint exports": fp32 for DeepSpeed (as zero_to_fp32 writes), as stored otherwise. Integer tensors are never converted.</source>
        <translation>导出中浮点张量的类型。“按检查点的默认方式”：DeepSpeed 为 fp32（与 zero_to_fp32 相同），其他按存储的类型。整数张量从不转换。</translation>
    </message>
    <message>
        <location filename="../app/export_dialog.cpp" line="235" />
        <source>Choose an output folder first.</source>
        <translation>请先选择输出文件夹。</translation>
    </message>
    <message>
        <location filename="../app/export_dialog.cpp" line="239" />
        <source>Tag %1 cannot be read: %2 Choose a tag that can be read.</source>
        <translation>无法读取标签 %1：%2 请选择一个可以读取的标签。</translation>
    </message>
    <message>
        <location filename="../app/export_dialog.cpp" line="267" />
        <source>Largest shard: '%1' is not a size like 5GB, 500MB or 2000000 (bytes).</source>
        <translation>最大分片：“%1”不是有效大小，例如 5GB、500MB 或 2000000（字节）。</translation>
    </message>
    <message>
        <location filename="../app/export_dialog.cpp" line="299" />
        <source>Nothing written: %1 holds files. Choose an empty folder, or replace the export in it.</source>
        <translation>未写入任何内容：%1 中已有文件。请选择空文件夹，或替换其中的导出。</translation>
    </message>
</context>
<context>
    <name>ckpt::app::Fact</name>
    <message>
        <location filename="../app/kinds.cpp" line="48" />
        <source>role</source>
        <translation>角色</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="48" />
        <source>data-parallel rank</source>
        <translation>数据并行 rank</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="49" />
        <source>tensor-parallel rank</source>
        <translation>张量并行 rank</translation>
    </message>
</context>
<context>
    <name>ckpt::app::FileBars</name>
    <message>
        <location filename="../app/bloat_bars.cpp" line="109" />
        <source>%1, not a torch.save file</source>
        <translation>%1，不是 torch.save 文件</translation>
    </message>
    <message>
        <location filename="../app/bloat_bars.cpp" line="110" />
        <source>%1, nothing wasted</source>
        <translation>%1，没有浪费</translation>
    </message>
    <message>
        <location filename="../app/bloat_bars.cpp" line="111" />
        <source>%1, %2 wasted (%3%)</source>
        <translation>%1，浪费 %2（%3%）</translation>
    </message>
    <message>
        <location filename="../app/bloat_bars.cpp" line="125" />
        <source>not a torch.save file</source>
        <translation>不是 torch.save 文件</translation>
    </message>
    <message>
        <location filename="../app/bloat_bars.cpp" line="127" />
        <source>used by a view</source>
        <translation>被视图使用</translation>
    </message>
    <message>
        <location filename="../app/bloat_bars.cpp" line="128" />
        <source>wasted (no view reaches it)</source>
        <translation>浪费（没有视图用到）</translation>
    </message>
    <message>
        <location filename="../app/bloat_bars.cpp" line="129" />
        <source>overhead (pickle, zip records)</source>
        <translation>开销（pickle、zip 记录）</translation>
    </message>
    <message>
        <location filename="../app/bloat_bars.cpp" line="132" />
        <source>file</source>
        <translation>文件</translation>
    </message>
    <message>
        <location filename="../app/bloat_bars.cpp" line="157" />
        <source>used</source>
        <translation>已使用</translation>
    </message>
    <message>
        <location filename="../app/bloat_bars.cpp" line="158" />
        <source>wasted</source>
        <translation>浪费</translation>
    </message>
    <message>
        <location filename="../app/bloat_bars.cpp" line="159" />
        <source>overhead</source>
        <translation>开销</translation>
    </message>
    <message>
        <location filename="../app/bloat_bars.cpp" line="161" />
        <source>other file</source>
        <translation>其他文件</translation>
    </message>
</context>
<context>
    <name>ckpt::app::FilterProxy</name>
    <message>
        <location filename="../app/tree_model.cpp" line="179" />
        <source>Not a valid regular expression: %1 (at character %2)</source>
        <translation>不是有效的正则表达式：%1（第 %2 个字符处）</translation>
    </message>
</context>
<context>
    <name>ckpt::app::JobManager</name>
    <message>
        <location filename="../app/job_manager.cpp" line="22" />
        <source>Fetched %1 from the network.</source>
        <translation>已从网络获取 %1。</translation>
    </message>
    <message>
        <location filename="../app/job_manager.cpp" line="23" />
        <source>Fetched %1 from the network in %2 s (%3/s).</source>
        <translation>已在 %2 秒内从网络获取 %1（%3/s）。</translation>
    </message>
    <message>
        <location filename="../app/job_manager.cpp" line="31" />
        <source>%1: %2 of %3</source>
        <translation>%1：%2 / %3</translation>
    </message>
    <message>
        <location filename="../app/job_manager.cpp" line="33" />
        <source>%1: %2 of %3, %4/s, %5 s left</source>
        <translation>%1：%2 / %3，%4/秒，剩余 %5 秒</translation>
    </message>
    <message>
        <location filename="../app/job_manager.cpp" line="89" />
        <source>%1: %2; retrying in %3 s, attempt %4 of %5</source>
        <translation>%1：%2；%3 秒后重试，第 %4 次（共 %5 次）</translation>
    </message>
    <message numerus="yes">
        <location filename="../app/job_manager.cpp" line="93" />
        <source>%n file(s)</source>
        <translation><numerusform>%n 个文件</numerusform></translation>
    </message>
    <message>
        <location filename="../app/job_manager.cpp" line="95" />
        <source>fetching %1</source>
        <translation>正在获取 %1</translation>
    </message>
    <message>
        <location filename="../app/job_manager.cpp" line="96" />
        <source>fetching %1, %2 of %3</source>
        <translation>正在获取 %1，%2 / %3</translation>
    </message>
</context>
<context>
    <name>ckpt::app::MainWindow</name>
    <message>
        <location filename="../app/main_window.cpp" line="97" />
        <location filename="../app/main_window.cpp" line="463" />
        <source>Checkpoint Studio</source>
        <translation>Checkpoint Studio</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="290" />
        <source>&amp;File</source>
        <translation>文件(&amp;F)</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="298" />
        <source>Open &amp;Folder...</source>
        <translation>打开文件夹(&amp;F)...</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="299" />
        <source>Open checkpoint folder</source>
        <translation>打开检查点文件夹</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="291" />
        <source>&amp;Open File...</source>
        <translation>打开文件(&amp;O)...</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="159" />
        <source>&lt;h2&gt;Checkpoint Studio&lt;/h2&gt;&lt;p&gt;Open, or drop here:&lt;/p&gt;&lt;ul&gt;&lt;li&gt;&lt;b&gt;a run folder&lt;/b&gt;: DeepSpeed (with &lt;code&gt;latest&lt;/code&gt;), a Hugging Face Trainer output folder, Composer, PyTorch DCP, a Universal checkpoint (File &amp;gt; Open Folder, Ctrl+Shift+O)&lt;/li&gt;&lt;li&gt;&lt;b&gt;one tag&lt;/b&gt;: &lt;code&gt;global_step1000/&lt;/code&gt;, &lt;code&gt;checkpoint-500/&lt;/code&gt;&lt;/li&gt;&lt;li&gt;&lt;b&gt;a file&lt;/b&gt;: &lt;code&gt;.pt&lt;/code&gt;, &lt;code&gt;.bin&lt;/code&gt;, &lt;code&gt;.safetensors&lt;/code&gt;, a Composer &lt;code&gt;.pt.tar&lt;/code&gt; (File &amp;gt; Open File, Ctrl+O)&lt;/li&gt;&lt;li&gt;&lt;b&gt;a URL&lt;/b&gt;: &lt;code&gt;s3://&lt;/code&gt;, &lt;code&gt;gs://&lt;/code&gt;, &lt;code&gt;hf://&lt;/code&gt;, &lt;code&gt;https://&lt;/code&gt; (File &amp;gt; Open URL, Ctrl+L)&lt;/li&gt;&lt;/ul&gt;&lt;p&gt;Nothing is ever written into what you open. Recent items:&lt;/p&gt;</source>
        <translation>&lt;h2&gt;Checkpoint Studio&lt;/h2&gt;&lt;p&gt;打开或拖放到此处：&lt;/p&gt;&lt;ul&gt;&lt;li&gt;&lt;b&gt;训练目录&lt;/b&gt;：DeepSpeed（含 &lt;code&gt;latest&lt;/code&gt;）、Hugging Face Trainer 输出目录、Composer、PyTorch DCP、Universal 检查点（文件 &amp;gt; 打开文件夹，Ctrl+Shift+O）&lt;/li&gt;&lt;li&gt;&lt;b&gt;单个标签&lt;/b&gt;：&lt;code&gt;global_step1000/&lt;/code&gt;、&lt;code&gt;checkpoint-500/&lt;/code&gt;&lt;/li&gt;&lt;li&gt;&lt;b&gt;文件&lt;/b&gt;：&lt;code&gt;.pt&lt;/code&gt;、&lt;code&gt;.bin&lt;/code&gt;、&lt;code&gt;.safetensors&lt;/code&gt;、Composer &lt;code&gt;.pt.tar&lt;/code&gt;（文件 &amp;gt; 打开文件，Ctrl+O）&lt;/li&gt;&lt;li&gt;&lt;b&gt;URL&lt;/b&gt;：&lt;code&gt;s3://&lt;/code&gt;、&lt;code&gt;gs://&lt;/code&gt;、&lt;code&gt;hf://&lt;/code&gt;、&lt;code&gt;https://&lt;/code&gt;（文件 &amp;gt; 打开 URL，Ctrl+L）&lt;/li&gt;&lt;/ul&gt;&lt;p&gt;从不向打开的内容写入任何东西。最近打开：&lt;/p&gt;</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="172" />
        <source>Open the bundled example (a real DeepSpeed run: ZeRO-2, bf16, 2 ranks, 2 tags)</source>
        <translation>打开自带示例（真实的 DeepSpeed 训练目录：ZeRO-2、bf16、2 个 rank、2 个标签）</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="274" />
        <source>Compute: ...</source>
        <translation>计算设备：……</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="293" />
        <source>Open checkpoint file</source>
        <translation>打开检查点文件</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="294" />
        <source>Checkpoints (*.pt *.pth *.bin *.ckpt *.safetensors);;All files (*)</source>
        <translation>检查点 (*.pt *.pth *.bin *.ckpt *.safetensors);;所有文件 (*)</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="303" />
        <source>Open &amp;URL...</source>
        <translation>打开 URL(&amp;U)...</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="305" />
        <source>Open a checkpoint on S3 or an HTTP(S) server, reading only what is shown</source>
        <translation>打开 S3 或 HTTP(S) 服务器上的检查点，只读取显示所需的内容</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="306" />
        <source>Open &amp;Recent</source>
        <translation>最近打开(&amp;R)</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="309" />
        <source>Re&amp;load</source>
        <translation>重新加载(&amp;L)</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="313" />
        <source>Read the open checkpoint again from disk (new tags, changed files)</source>
        <translation>从磁盘重新读取当前检查点（新标签、已更改的文件）</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="316" />
        <source>&amp;Export Model...</source>
        <translation>导出模型(&amp;E)...</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="319" />
        <source>&amp;Slim...</source>
        <translation>精简(&amp;S)...</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="327" />
        <source>Write a copy whose storages keep only the bytes their tensors view</source>
        <translation>写出一份副本，其存储只保留张量视图用到的字节</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="329" />
        <source>&amp;Verify...</source>
        <translation>校验(&amp;V)...</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="331" />
        <source>Prove the checkpoint whole: every file there, every record's checksum, a manifest's hashes</source>
        <translation>证明检查点完整：每个文件都在、每条记录的校验和、清单中的哈希</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="334" />
        <source>Convert to &amp;Universal...</source>
        <translation>转换为 Universal 检查点(&amp;U)...</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="335" />
        <source>Write the selected ZeRO tag as a DeepSpeed Universal checkpoint, to resume on another GPU count</source>
        <translation>将所选 ZeRO 标签写为 DeepSpeed Universal 检查点，以便在不同数量的 GPU 上恢复训练</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="338" />
        <source>&amp;Bloat of a Folder...</source>
        <translation>分析文件夹的膨胀(&amp;B)...</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="341" />
        <source>Folder to analyse</source>
        <translation>要分析的文件夹</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="344" />
        <source>&amp;Compare...</source>
        <translation>比较(&amp;C)...</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="346" />
        <source>Compare Selected &amp;Tags</source>
        <translation>比较所选标签(&amp;T)</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="352" />
        <source>Select two tags in the tree (Ctrl+click) to compare them tensor by tensor</source>
        <translation>在树中选择两个标签（Ctrl+单击），逐个张量比较它们</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="355" />
        <source>&amp;Find...</source>
        <translation>查找(&amp;F)...</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="361" />
        <source>Filter the tree by name</source>
        <translation>按名称筛选树</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="362" />
        <source>&amp;Close Checkpoint</source>
        <translation>关闭检查点(&amp;C)</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="369" />
        <source>Start &amp;Page</source>
        <translation>起始页(&amp;P)</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="371" />
        <source>&amp;Preferences...</source>
        <translation>首选项(&amp;P)...</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="374" />
        <source>&amp;Quit</source>
        <translation>退出(&amp;Q)</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="376" />
        <source>Main</source>
        <translation>主工具栏</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="125" />
        <source>Bloat</source>
        <translation>膨胀分析</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="131" />
        <source>&amp;Bloat</source>
        <translation>膨胀分析(&amp;B)</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="134" />
        <source>Where the bytes of the selected file, tag or checkpoint go, and how many are wasted</source>
        <translation>所选文件、标签或检查点的字节去向，以及浪费了多少</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="135" />
        <source>&amp;View</source>
        <translation>视图(&amp;V)</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="149" />
        <source>%1 is not open in the tree</source>
        <translation>%1 未在树中打开</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="194" />
        <source>Filter by name (wildcards, or a regular expression)</source>
        <translation>按名称筛选（通配符或正则表达式）</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="195" />
        <source>Regular expression</source>
        <translation>正则表达式</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="266" />
        <source>Cancel</source>
        <translation>取消</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="394" />
        <source>No recent checkpoints</source>
        <translation>没有最近打开的检查点</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="397" />
        <source>Clear the List</source>
        <translation>清空列表</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="407" />
        <source>&amp;Help</source>
        <translation>帮助(&amp;H)</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="408" />
        <source>&amp;Keyboard Shortcuts</source>
        <translation>键盘快捷键(&amp;K)</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="409" />
        <source>Keyboard Shortcuts</source>
        <translation>键盘快捷键</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="412" />
        <source>&amp;Documentation</source>
        <translation>文档(&amp;D)</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="415" />
        <source>Documentation</source>
        <translation>文档</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="416" />
        <source>The documentation is the README and the docs/ folder of the source, installed in /usr/share/doc/checkpoint-studio.</source>
        <translation>文档即源代码中的 README 和 docs/ 目录，安装在 /usr/share/doc/checkpoint-studio。</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="419" />
        <source>&amp;About Checkpoint Studio</source>
        <translation>关于 Checkpoint Studio(&amp;A)</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="420" />
        <source>About Checkpoint Studio</source>
        <translation>关于 Checkpoint Studio</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="421" />
        <source>About &amp;Qt</source>
        <translation>关于 &amp;Qt</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="553" />
        <source>Cancelling...</source>
        <translation>正在取消...</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="566" />
        <source>Opening cancelled</source>
        <translation>已取消打开</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="279" />
        <source>Compute: %1</source>
        <translation>计算设备：%1</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="440" />
        <source>&lt;h3&gt;Checkpoint Studio %1&lt;/h3&gt;&lt;p&gt;Inspect, export, convert and compare DeepSpeed, Composer, PyTorch DCP and Hugging Face checkpoints without Python. No pickled code is ever run, and nothing is written into a checkpoint.&lt;/p&gt;&lt;p&gt;Compute: %2&lt;br&gt;Qt %3&lt;/p&gt;&lt;p&gt;Licensed under the Apache License 2.0. Uses Qt (LGPL-3.0, linked dynamically), libarchive (BSD-2-Clause), libcurl (curl licence), OpenSSL (Apache-2.0), zlib (Zlib), xxHash (BSD-2-Clause), expat (MIT), nlohmann/json (MIT) and CLI11 (BSD-3-Clause). The licence texts are in the package's copyright file.&lt;/p&gt;</source>
        <translation>&lt;h3&gt;Checkpoint Studio %1&lt;/h3&gt;&lt;p&gt;无需 Python 即可查看、导出、转换和比较 DeepSpeed、Composer、PyTorch DCP 和 Hugging Face 检查点。从不运行任何 pickle 代码，也从不向检查点写入任何内容。&lt;/p&gt;&lt;p&gt;计算设备：%2&lt;br&gt;Qt %3&lt;/p&gt;&lt;p&gt;依据 Apache License 2.0 授权。使用 Qt（LGPL-3.0，动态链接）、libarchive（BSD-2-Clause）、libcurl（curl 许可证）、OpenSSL（Apache-2.0）、zlib（Zlib）、xxHash（BSD-2-Clause）、expat（MIT）、nlohmann/json（MIT）和 CLI11（BSD-3-Clause）。许可证全文见软件包的 copyright 文件。&lt;/p&gt;</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="528" />
        <source>Reading the layout</source>
        <translation>正在读取布局</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="531" />
        <source>Opening %1...</source>
        <translation>正在打开 %1...</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="576" />
        <source>Cannot open: %1</source>
        <translation>无法打开：%1</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="581" />
        <source>Could not open %1: %2
Still showing %3.</source>
        <translation>无法打开 %1：%2
仍显示 %3。</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="585" />
        <source>Could not open %1: %2</source>
        <translation>无法打开 %1：%2</translation>
    </message>
    <message numerus="yes">
        <location filename="../app/main_window.cpp" line="613" />
        <source>&lt;b&gt;%n warning(s)&lt;/b&gt;&lt;br&gt;</source>
        <translation><numerusform>&lt;b&gt;%n 条警告&lt;/b&gt;&lt;br&gt;</numerusform></translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="633" />
        <source>%1 - Checkpoint Studio</source>
        <translation>%1 - Checkpoint Studio</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="634" />
        <source>Opened %1</source>
        <translation>已打开 %1</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="909" />
        <source>Writing %1...</source>
        <translation>正在写入 %1...</translation>
    </message>
    <message numerus="yes">
        <location filename="../app/main_window.cpp" line="915" />
        <source>Wrote %n tensor(s), %1, to %2</source>
        <translation><numerusform>已将 %n 个张量（%1）写入 %2</numerusform></translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="919" />
        <source>Cancelled</source>
        <translation>已取消</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="929" />
        <source>Export tensor</source>
        <translation>导出张量</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="930" />
        <source>safetensors (*.safetensors);;PyTorch (*.pt)</source>
        <translation>safetensors (*.safetensors);;PyTorch (*.pt)</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="942" />
        <source>Show Values and Statistics</source>
        <translation>显示数值和统计信息</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="943" />
        <source>Export Tensor...</source>
        <translation>导出张量...</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="945" />
        <source>Export with Optimizer State...</source>
        <translation>连同优化器状态导出...</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="950" />
        <source>Compare</source>
        <translation>比较</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="952" />
        <source>Compare (select two tags)</source>
        <translation>比较（请选择两个标签）</translation>
    </message>
</context>
<context>
    <name>ckpt::app::OpenUrlDialog</name>
    <message>
        <location filename="../app/open_url_dialog.cpp" line="22" />
        <source>Open URL</source>
        <translation>打开 URL</translation>
    </message>
    <message>
        <location filename="../app/open_url_dialog.cpp" line="25" />
        <source>A checkpoint folder or file on S3, Google Cloud Storage, the Hugging Face Hub or an HTTP(S) server. Only the bytes the window needs are read; credentials and endpoints come from the environment (AWS_*, GS_* or GOOGLE_OAUTH_ACCESS_TOKEN, HF_TOKEN), else from File &gt; Preferences, else the usual files (~/.aws, gcloud, ~/.cache/huggingface).</source>
        <translation>S3、Google Cloud Storage、Hugging Face Hub 或 HTTP(S) 服务器上的检查点文件夹或文件。只读取窗口需要的字节；凭据和端点来自环境变量（AWS_*、GS_* 或 GOOGLE_OAUTH_ACCESS_TOKEN、HF_TOKEN），其次来自“文件 &gt; 首选项”，再次来自常用文件（~/.aws、gcloud、~/.cache/huggingface）。</translation>
    </message>
    <message>
        <location filename="../app/open_url_dialog.cpp" line="39" />
        <source>s3://bucket/run/global_step100 or https://host/model.safetensors</source>
        <translation>s3://bucket/run/global_step100 或 https://host/model.safetensors</translation>
    </message>
    <message>
        <location filename="../app/open_url_dialog.cpp" line="57" />
        <source>Open</source>
        <translation>打开</translation>
    </message>
    <message>
        <location filename="../app/open_url_dialog.cpp" line="58" />
        <source>Cancel</source>
        <translation>取消</translation>
    </message>
    <message>
        <location filename="../app/open_url_dialog.cpp" line="85" />
        <source>%1 is not a URL as written: did you mean %2 ?</source>
        <translation>%1 不是有效的 URL 写法：您是否想输入 %2 ？</translation>
    </message>
    <message>
        <location filename="../app/open_url_dialog.cpp" line="87" />
        <source>%1 is not a URL: use s3://BUCKET/KEY, gs://BUCKET/KEY, hf://ORG/REPO/PATH or https://HOST/PATH</source>
        <translation>%1 不是 URL：请使用 s3://BUCKET/KEY、gs://BUCKET/KEY、hf://ORG/REPO/PATH 或 https://HOST/PATH</translation>
    </message>
</context>
<context>
    <name>ckpt::app::OperationPanel</name>
    <message>
        <location filename="../app/operation_panel.cpp" line="29" />
        <location filename="../app/operation_panel.cpp" line="105" />
        <source>Cancel</source>
        <translation>取消</translation>
    </message>
    <message>
        <location filename="../app/operation_panel.cpp" line="59" />
        <source>Cancelling...</source>
        <translation>正在取消...</translation>
    </message>
    <message>
        <location filename="../app/operation_panel.cpp" line="107" />
        <source>Starting...</source>
        <translation>正在开始...</translation>
    </message>
    <message>
        <location filename="../app/operation_panel.cpp" line="125" />
        <source>Close</source>
        <translation>关闭</translation>
    </message>
    <message>
        <location filename="../app/operation_panel.cpp" line="128" />
        <source>Cancelled; nothing was left behind.</source>
        <translation>已取消，没有留下任何输出。</translation>
    </message>
    <message>
        <location filename="../app/operation_panel.cpp" line="135" />
        <source>%1: %2</source>
        <translation>%1：%2</translation>
    </message>
</context>
<context>
    <name>ckpt::app::PreferencesDialog</name>
    <message>
        <location filename="../app/preferences_dialog.cpp" line="42" />
        <source>Preferences</source>
        <translation>首选项</translation>
    </message>
    <message>
        <location filename="../app/preferences_dialog.cpp" line="44" />
        <location filename="../app/preferences_dialog.cpp" line="49" />
        <source>System</source>
        <translation>跟随系统</translation>
    </message>
    <message>
        <location filename="../app/preferences_dialog.cpp" line="45" />
        <source>Light</source>
        <translation>浅色</translation>
    </message>
    <message>
        <location filename="../app/preferences_dialog.cpp" line="46" />
        <source>Dark</source>
        <translation>深色</translation>
    </message>
    <message>
        <location filename="../app/preferences_dialog.cpp" line="53" />
        <source>Automatic (the GPU where it is faster)</source>
        <translation>自动（GPU 更快时使用 GPU）</translation>
    </message>
    <message>
        <location filename="../app/preferences_dialog.cpp" line="54" />
        <source>CPU</source>
        <translation>CPU</translation>
    </message>
    <message>
        <location filename="../app/preferences_dialog.cpp" line="55" />
        <source>CUDA GPU</source>
        <translation>CUDA GPU</translation>
    </message>
    <message>
        <location filename="../app/preferences_dialog.cpp" line="58" />
        <source>Beside the checkpoint (the home folder for a URL)</source>
        <translation>检查点旁边（URL 则为主文件夹）</translation>
    </message>
    <message>
        <location filename="../app/preferences_dialog.cpp" line="59" />
        <source>Palette</source>
        <translation>配色</translation>
    </message>
    <message>
        <location filename="../app/preferences_dialog.cpp" line="60" />
        <source>Language</source>
        <translation>语言</translation>
    </message>
    <message>
        <location filename="../app/preferences_dialog.cpp" line="61" />
        <source>Takes effect when Checkpoint Studio starts next.</source>
        <translation>下次启动 Checkpoint Studio 时生效。</translation>
    </message>
    <message>
        <location filename="../app/preferences_dialog.cpp" line="62" />
        <location filename="../app/preferences_dialog.cpp" line="109" />
        <source>Output folder</source>
        <translation>输出文件夹</translation>
    </message>
    <message>
        <location filename="../app/preferences_dialog.cpp" line="63" />
        <source>Compute device</source>
        <translation>计算设备</translation>
    </message>
    <message>
        <location filename="../app/preferences_dialog.cpp" line="65" />
        <source>Remote storage</source>
        <translation>远程存储</translation>
    </message>
    <message>
        <location filename="../app/preferences_dialog.cpp" line="67" />
        <source>Used for s3://, gs:// and hf:// URLs where the environment does not set the variable: a window started from the desktop has no shell environment.</source>
        <translation>用于 s3://、gs:// 和 hf:// URL，仅在环境未设置相应变量时生效：从桌面启动的窗口没有 shell 环境。</translation>
    </message>
    <message>
        <location filename="../app/preferences_dialog.cpp" line="85" />
        <source>OK</source>
        <translation>确定</translation>
    </message>
    <message>
        <location filename="../app/preferences_dialog.cpp" line="86" />
        <source>Cancel</source>
        <translation>取消</translation>
    </message>
    <message>
        <location filename="../app/preferences_dialog.cpp" line="105" />
        <source>Browse...</source>
        <translation>浏览...</translation>
    </message>
    <message>
        <location filename="../app/preferences_dialog.cpp" line="108" />
        <source>Choose a file</source>
        <translation>选择文件</translation>
    </message>
    <message>
        <location filename="../app/preferences_dialog.cpp" line="119" />
        <source>%1 is set in the environment (%2): it wins over this setting.</source>
        <translation>环境中已设置 %1（%2）：它优先于此设置。</translation>
    </message>
</context>
<context>
    <name>ckpt::app::RoleBar</name>
    <message>
        <location filename="../app/bloat_bars.cpp" line="266" />
        <source>%1: %2 (%3%)</source>
        <translation>%1：%2（%3%）</translation>
    </message>
    <message>
        <location filename="../app/bloat_bars.cpp" line="379" />
        <source>%1: %2 bytes (%3), %4% of %5</source>
        <translation>%1：%2 字节（%3），占 %5 的 %4%</translation>
    </message>
</context>
<context>
    <name>ckpt::app::ShardingMap</name>
    <message>
        <location filename="../app/sharding_map.cpp" line="172" />
        <source>rank %1: elements %2 to %3 (%4)</source>
        <translation>rank %1：元素 %2 至 %3（%4 个）</translation>
    </message>
    <message>
        <location filename="../app/sharding_map.cpp" line="179" />
        <source>rank %1 holds %2 elements, %3 of padding</source>
        <translation>rank %1 持有 %2 个元素，填充 %3 个</translation>
    </message>
    <message>
        <location filename="../app/sharding_map.cpp" line="58" />
        <location filename="../app/sharding_map.cpp" line="215" />
        <source>rank %1</source>
        <translation>rank %1</translation>
    </message>
    <message>
        <location filename="../app/sharding_map.cpp" line="183" />
        <source>block %1</source>
        <translation>块 %1</translation>
    </message>
    <message>
        <location filename="../app/sharding_map.cpp" line="186" />
        <source>in %1: %2</source>
        <translation>在 %1 中：%2</translation>
    </message>
    <message>
        <location filename="../app/sharding_map.cpp" line="207" />
        <source>No tensors to draw</source>
        <translation>没有可绘制的张量</translation>
    </message>
    <message>
        <location filename="../app/sharding_map.cpp" line="330" />
        <source>group %1</source>
        <translation>组 %1</translation>
    </message>
    <message>
        <location filename="../app/sharding_map.cpp" line="237" />
        <source>Not sharded: each file's tensors in order, by size</source>
        <translation>未分片：按顺序列出每个文件的张量，按大小显示</translation>
    </message>
    <message>
        <location filename="../app/sharding_map.cpp" line="223" />
        <source>%1 elements</source>
        <translation>%1 个元素</translation>
    </message>
    <message numerus="yes">
        <location filename="../app/sharding_map.cpp" line="394" />
        <source>%n parameter(s) x %1 ranks</source>
        <translation><numerusform>%n 个参数 x %1 个 rank</numerusform></translation>
    </message>
    <message>
        <location filename="../app/sharding_map.cpp" line="415" />
        <source>padding / unused</source>
        <translation>填充 / 未使用</translation>
    </message>
</context>
<context>
    <name>ckpt::app::SlimDialog</name>
    <message>
        <location filename="../app/slim_dialog.cpp" line="63" />
        <source>%1 → %2, %3 saved (%4%)</source>
        <translation>%1 → %2，节省 %3（%4%）</translation>
    </message>
    <message>
        <location filename="../app/slim_dialog.cpp" line="74" />
        <source>Slim %1</source>
        <translation>精简 %1</translation>
    </message>
    <message>
        <location filename="../app/slim_dialog.cpp" line="77" />
        <source>Writes a copy of this folder in which every torch.save file keeps, of each storage, only the bytes its tensors view. Other files are copied. torch.load gives the same tensors; the input is not changed.</source>
        <translation>写出此文件夹的副本，其中每个 torch.save 文件的每个存储只保留其张量视图用到的字节。其他文件原样复制。torch.load 得到的张量相同；输入不会被修改。</translation>
    </message>
    <message>
        <location filename="../app/slim_dialog.cpp" line="80" />
        <source>Writes a copy of this file in which each storage keeps only the bytes its tensors view. torch.load gives the same tensors; the input is not changed.</source>
        <translation>写出此文件的副本，其中每个存储只保留其张量视图用到的字节。torch.load 得到的张量相同；输入不会被修改。</translation>
    </message>
    <message>
        <location filename="../app/slim_dialog.cpp" line="92" />
        <source>Browse...</source>
        <translation>浏览...</translation>
    </message>
    <message>
        <location filename="../app/slim_dialog.cpp" line="96" />
        <source>Input</source>
        <translation>输入</translation>
    </message>
    <message>
        <location filename="../app/slim_dialog.cpp" line="97" />
        <location filename="../app/slim_dialog.cpp" line="134" />
        <source>Output folder</source>
        <translation>输出文件夹</translation>
    </message>
    <message>
        <location filename="../app/slim_dialog.cpp" line="97" />
        <location filename="../app/slim_dialog.cpp" line="134" />
        <source>Output file</source>
        <translation>输出文件</translation>
    </message>
    <message>
        <location filename="../app/slim_dialog.cpp" line="101" />
        <source>The input is read from its URL; the copy is written on this computer.</source>
        <translation>从 URL 读取输入；副本写在本机上。</translation>
    </message>
    <message>
        <location filename="../app/slim_dialog.cpp" line="110" />
        <source>File</source>
        <translation>文件</translation>
    </message>
    <message>
        <location filename="../app/slim_dialog.cpp" line="110" />
        <source>Action</source>
        <translation>操作</translation>
    </message>
    <message>
        <location filename="../app/slim_dialog.cpp" line="110" />
        <source>Before</source>
        <translation>之前</translation>
    </message>
    <message>
        <location filename="../app/slim_dialog.cpp" line="110" />
        <source>Predicted</source>
        <translation>预计</translation>
    </message>
    <message>
        <location filename="../app/slim_dialog.cpp" line="110" />
        <source>After</source>
        <translation>之后</translation>
    </message>
    <message>
        <location filename="../app/slim_dialog.cpp" line="121" />
        <source>Slim</source>
        <translation>精简</translation>
    </message>
    <message>
        <location filename="../app/slim_dialog.cpp" line="121" />
        <source>Open in window</source>
        <translation>在窗口中打开</translation>
    </message>
    <message>
        <location filename="../app/slim_dialog.cpp" line="153" />
        <source>Cannot predict: %1</source>
        <translation>无法预计：%1</translation>
    </message>
    <message>
        <location filename="../app/slim_dialog.cpp" line="161" />
        <source>Predicted: %1.</source>
        <translation>预计：%1。</translation>
    </message>
    <message>
        <location filename="../app/slim_dialog.cpp" line="162" />
        <source>Predicted: nothing to gain, %1 would be copied as it is.</source>
        <translation>预计：无可节省，%1 将原样复制。</translation>
    </message>
    <message>
        <location filename="../app/slim_dialog.cpp" line="175" />
        <source>%1 ms</source>
        <translation>%1 毫秒</translation>
    </message>
    <message>
        <location filename="../app/slim_dialog.cpp" line="175" />
        <source>%1 s</source>
        <translation>%1 秒</translation>
    </message>
    <message>
        <location filename="../app/slim_dialog.cpp" line="178" />
        <source>Done in %1: %2. Written to %3.</source>
        <translation>完成，用时 %1：%2。已写入 %3。</translation>
    </message>
    <message>
        <location filename="../app/slim_dialog.cpp" line="121" />
        <source>Slim failed</source>
        <translation>精简失败</translation>
    </message>
    <message>
        <location filename="../app/slim_dialog.cpp" line="230" />
        <source>slimmed</source>
        <translation>已精简</translation>
    </message>
    <message>
        <location filename="../app/slim_dialog.cpp" line="231" />
        <source>copied (not bloated)</source>
        <translation>已复制（没有膨胀）</translation>
    </message>
    <message>
        <location filename="../app/slim_dialog.cpp" line="233" />
        <source>copied (not a torch.save file)</source>
        <translation>已复制（不是 torch.save 文件）</translation>
    </message>
    <message>
        <location filename="../app/slim_dialog.cpp" line="255" />
        <location filename="../app/slim_dialog.cpp" line="257" />
        <source>%1 bytes</source>
        <translation>%1 字节</translation>
    </message>
    <message>
        <location filename="../app/slim_dialog.cpp" line="263" />
        <source>Predicting the savings...</source>
        <translation>正在预计可节省的空间...</translation>
    </message>
    <message>
        <location filename="../app/slim_dialog.cpp" line="290" />
        <source>Choose an output folder first.</source>
        <translation>请先选择输出文件夹。</translation>
    </message>
    <message>
        <location filename="../app/slim_dialog.cpp" line="290" />
        <source>Choose an output file first.</source>
        <translation>请先选择输出文件。</translation>
    </message>
    <message>
        <location filename="../app/slim_dialog.cpp" line="299" />
        <source>Nothing written: %1 holds files. Choose an empty folder, or replace them.</source>
        <translation>未写入任何内容：%1 中已有文件。请选择空文件夹，或替换这些文件。</translation>
    </message>
</context>
<context>
    <name>ckpt::app::StorageModel</name>
    <message>
        <location filename="../app/storage_model.cpp" line="69" />
        <source>%1
%2 %3, %4 bytes of elements
Click to select it in the tree.</source>
        <translation>%1
%2 %3，元素共 %4 字节
单击可在树中选中它。</translation>
    </message>
    <message>
        <location filename="../app/storage_model.cpp" line="102" />
        <source>%1: %2 bytes, %3 reached by its views, %4 wasted</source>
        <translation>%1：%2 字节，视图用到 %3，浪费 %4</translation>
    </message>
    <message>
        <location filename="../app/storage_model.cpp" line="106" />
        <source>Reached by something other than a plain view: all of it counts.</source>
        <translation>被普通视图以外的方式使用：全部计为已使用。</translation>
    </message>
    <message>
        <location filename="../app/storage_model.cpp" line="108" />
        <source>A view of storage %1: its bytes are counted there.</source>
        <translation>存储 %1 的视图：其字节计入该存储。</translation>
    </message>
    <message>
        <location filename="../app/storage_model.cpp" line="110" />
        <source>A view too fragmented to enumerate is counted by its hull.</source>
        <translation>过于零碎、无法逐段列出的视图按其覆盖范围计算。</translation>
    </message>
    <message>
        <location filename="../app/storage_model.cpp" line="124" />
        <source>a view of storage %1</source>
        <translation>存储 %1 的视图</translation>
    </message>
    <message>
        <location filename="../app/storage_model.cpp" line="126" />
        <source>no tensor (saved for itself)</source>
        <translation>无张量（单独保存）</translation>
    </message>
    <message numerus="yes">
        <location filename="../app/storage_model.cpp" line="127" />
        <source>%n tensor(s)</source>
        <translation><numerusform>%n 个张量</numerusform></translation>
    </message>
    <message>
        <location filename="../app/storage_model.cpp" line="52" />
        <source>Storage</source>
        <translation>存储</translation>
    </message>
    <message>
        <location filename="../app/storage_model.cpp" line="52" />
        <source>Size</source>
        <translation>大小</translation>
    </message>
    <message>
        <location filename="../app/storage_model.cpp" line="52" />
        <source>Used</source>
        <translation>已使用</translation>
    </message>
    <message>
        <location filename="../app/storage_model.cpp" line="53" />
        <source>% used</source>
        <translation>使用率</translation>
    </message>
    <message>
        <location filename="../app/storage_model.cpp" line="53" />
        <source>Tensors</source>
        <translation>张量</translation>
    </message>
</context>
<context>
    <name>ckpt::app::TagOverview</name>
    <message numerus="yes">
        <location filename="../app/tag_overview.cpp" line="167" />
        <source>&lt;h3&gt;%n tag(s)&lt;/h3&gt;</source>
        <translation><numerusform>&lt;h3&gt;%n 个标签&lt;/h3&gt;</numerusform></translation>
    </message>
    <message>
        <location filename="../app/tag_overview.cpp" line="174" />
        <source>cannot be read</source>
        <translation>无法读取</translation>
    </message>
    <message>
        <location filename="../app/tag_overview.cpp" line="175" />
        <source>step %1</source>
        <translation>第 %1 步</translation>
    </message>
    <message>
        <location filename="../app/tag_overview.cpp" line="176" />
        <source>step unknown</source>
        <translation>步数未知</translation>
    </message>
    <message numerus="yes">
        <location filename="../app/tag_overview.cpp" line="177" />
        <source>, %1 in %n file(s)</source>
        <translation><numerusform>，%1，共 %n 个文件</numerusform></translation>
    </message>
    <message>
        <location filename="../app/tag_overview.cpp" line="178" />
        <location filename="../app/tag_overview.cpp" line="182" />
        <source> (latest)</source>
        <translation>（最新）</translation>
    </message>
    <message>
        <location filename="../app/tag_overview.cpp" line="184" />
        <source>Cannot be read</source>
        <translation>无法读取</translation>
    </message>
    <message>
        <location filename="../app/tag_overview.cpp" line="193" />
        <source>No model to export</source>
        <translation>没有可导出的模型</translation>
    </message>
    <message>
        <location filename="../app/tag_overview.cpp" line="195" />
        <source>Warning</source>
        <translation>警告</translation>
    </message>
    <message>
        <location filename="../app/tag_overview.cpp" line="197" />
        <source>Trainable</source>
        <translation>可训练</translation>
    </message>
    <message>
        <location filename="../app/tag_overview.cpp" line="198" />
        <location filename="../app/tag_overview.cpp" line="199" />
        <location filename="../app/tag_overview.cpp" line="200" />
        <source>%1 tensors, %2 elements</source>
        <translation>%1 个张量，%2 个元素</translation>
    </message>
    <message>
        <location filename="../app/tag_overview.cpp" line="199" />
        <source>Frozen</source>
        <translation>冻结</translation>
    </message>
    <message>
        <location filename="../app/tag_overview.cpp" line="200" />
        <source>Buffers</source>
        <translation>缓冲区</translation>
    </message>
    <message>
        <location filename="../app/tag_overview.cpp" line="201" />
        <source>Tied</source>
        <translation>绑定</translation>
    </message>
    <message numerus="yes">
        <location filename="../app/tag_overview.cpp" line="201" />
        <source>%n alias(es)</source>
        <translation><numerusform>%n 个别名</numerusform></translation>
    </message>
    <message>
        <location filename="../app/tag_overview.cpp" line="202" />
        <source>Bytes on disk by role</source>
        <translation>按用途统计的磁盘字节数</translation>
    </message>
    <message>
        <location filename="../app/tag_overview.cpp" line="204" />
        <source>Reading the files...</source>
        <translation>正在读取文件...</translation>
    </message>
    <message>
        <location filename="../app/tag_overview.cpp" line="206" />
        <source>Cannot read</source>
        <translation>无法读取</translation>
    </message>
    <message>
        <location filename="../app/tag_overview.cpp" line="211" />
        <source>total</source>
        <translation>合计</translation>
    </message>
    <message>
        <location filename="../app/tag_overview.cpp" line="213" />
        <source>Rank files</source>
        <translation>rank 文件</translation>
    </message>
    <message numerus="yes">
        <location filename="../app/tag_overview.cpp" line="231" />
        <source>%n %1 file(s)</source>
        <translation><numerusform>%n 个%1文件</numerusform></translation>
    </message>
    <message>
        <location filename="../app/tag_overview.cpp" line="235" />
        <source> each, %1 in all</source>
        <translation>（每个），共 %1</translation>
    </message>
</context>
<context>
    <name>ckpt::app::TrainingChart</name>
    <message>
        <location filename="../app/training_chart.cpp" line="104" />
        <source>Step %1</source>
        <translation>第 %1 步</translation>
    </message>
    <message>
        <location filename="../app/training_chart.cpp" line="105" />
        <source>, epoch %1</source>
        <translation>，第 %1 轮</translation>
    </message>
    <message>
        <location filename="../app/training_chart.cpp" line="106" />
        <source> of %1 steps</source>
        <translation>（共 %1 步）</translation>
    </message>
    <message>
        <location filename="../app/training_chart.cpp" line="109" />
        <source>; best: %1</source>
        <translation>；最佳：%1</translation>
    </message>
    <message>
        <location filename="../app/training_chart.cpp" line="133" />
        <source>loss</source>
        <translation>损失</translation>
    </message>
    <message>
        <location filename="../app/training_chart.cpp" line="134" />
        <source>eval loss</source>
        <translation>评估损失</translation>
    </message>
    <message>
        <location filename="../app/training_chart.cpp" line="137" />
        <source>grad norm</source>
        <translation>梯度范数</translation>
    </message>
    <message>
        <location filename="../app/training_chart.cpp" line="169" />
        <location filename="../app/training_chart.cpp" line="180" />
        <source>learning rate</source>
        <translation>学习率</translation>
    </message>
    <message>
        <location filename="../app/training_chart.cpp" line="155" />
        <source>step</source>
        <translation>步</translation>
    </message>
    <message>
        <location filename="../app/training_chart.cpp" line="158" />
        <source>loss, grad norm</source>
        <translation>损失、梯度范数</translation>
    </message>
    <message>
        <location filename="../app/training_chart.cpp" line="229" />
        <source>Vertical lines: the run's checkpoints; &lt;span style='color:%1'&gt;&amp;#9646;&lt;/span&gt; the one shown, &lt;span style='color:%2'&gt;&amp;#9646;&lt;/span&gt; the best.</source>
        <translation>竖线：本次训练的检查点；&lt;span style='color:%1'&gt;&amp;#9646;&lt;/span&gt; 当前显示的，&lt;span style='color:%2'&gt;&amp;#9646;&lt;/span&gt; 最佳的。</translation>
    </message>
</context>
<context>
    <name>ckpt::app::TreeModel</name>
    <message>
        <location filename="../app/tree_model.cpp" line="62" />
        <source>bytes</source>
        <translation>字节串</translation>
    </message>
    <message>
        <location filename="../app/tree_model.cpp" line="98" />
        <source>Name</source>
        <translation>名称</translation>
    </message>
    <message>
        <location filename="../app/tree_model.cpp" line="98" />
        <source>Kind</source>
        <translation>类型</translation>
    </message>
    <message>
        <location filename="../app/tree_model.cpp" line="98" />
        <source>dtype</source>
        <translation>数据类型</translation>
    </message>
    <message>
        <location filename="../app/tree_model.cpp" line="99" />
        <source>Shape</source>
        <translation>形状</translation>
    </message>
    <message>
        <location filename="../app/tree_model.cpp" line="99" />
        <source>Elements</source>
        <translation>元素数</translation>
    </message>
    <message>
        <location filename="../app/tree_model.cpp" line="99" />
        <source>Bytes</source>
        <translation>字节</translation>
    </message>
    <message>
        <location filename="../app/tree_model.cpp" line="99" />
        <source>Ranks</source>
        <translation>Rank 数</translation>
    </message>
    <message>
        <location filename="../app/tree_model.cpp" line="123" />
        <source>Damaged (found by Verify): %1</source>
        <translation>已损坏（由校验发现）：%1</translation>
    </message>
    <message>
        <location filename="../app/tree_model.cpp" line="133" />
        <source>%1 — damaged</source>
        <translation>%1 — 已损坏</translation>
    </message>
    <message>
        <location filename="../app/tree_model.cpp" line="98" />
        <source>Value</source>
        <translation>值</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="17" />
        <source>torch-zip file</source>
        <translation>torch-zip 文件</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="18" />
        <source>torch-legacy file</source>
        <translation>torch-legacy 文件</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="19" />
        <source>safetensors file</source>
        <translation>safetensors 文件</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="20" />
        <source>configuration</source>
        <translation>配置</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="21" />
        <source>rank files</source>
        <translation>各 rank 文件</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="21" />
        <source>tag</source>
        <translation>标签</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="22" />
        <source>tag (latest)</source>
        <translation>标签（最新）</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="23" />
        <source>tag (cannot be read)</source>
        <translation>标签（无法读取）</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="24" />
        <source>ds_config</source>
        <translation>ds_config 配置</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="25" />
        <source>files</source>
        <translation>文件</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="26" />
        <source>parameters</source>
        <translation>参数</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="27" />
        <source>parameter</source>
        <translation>参数</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="28" />
        <source>parameter (frozen)</source>
        <translation>参数（冻结）</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="29" />
        <source>tied parameter</source>
        <translation>绑定参数</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="30" />
        <source>buffer</source>
        <translation>缓冲区</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="31" />
        <source>optimizer state</source>
        <translation>优化器状态</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="32" />
        <source>tensor</source>
        <translation>张量</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="33" />
        <source>other tensors</source>
        <translation>其他张量</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="34" />
        <source>other tensor</source>
        <translation>其他张量</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="35" />
        <source>folder</source>
        <translation>文件夹</translation>
    </message>
</context>
<context>
    <name>ckpt::app::UniversalDialog</name>
    <message>
        <location filename="../app/universal_dialog.cpp" line="44" />
        <source>Convert to Universal checkpoint</source>
        <translation>转换为 Universal 检查点</translation>
    </message>
    <message>
        <location filename="../app/universal_dialog.cpp" line="53" />
        <source>Browse...</source>
        <translation>浏览...</translation>
    </message>
    <message>
        <location filename="../app/universal_dialog.cpp" line="57" />
        <source>Data parallelism only: convert without universal_checkpoint_info (DeepSpeed's --inject_missing_state)</source>
        <translation>仅数据并行：在没有 universal_checkpoint_info 的情况下转换（DeepSpeed 的 --inject_missing_state）</translation>
    </message>
    <message>
        <location filename="../app/universal_dialog.cpp" line="61" />
        <source>Models trained without Megatron-style tensor parallelism (Hugging Face, plain DeepSpeed) save no universal_checkpoint_info; DeepSpeed's ds_to_universal then needs --inject_missing_state, which this does.</source>
        <translation>未使用 Megatron 式张量并行训练的模型（Hugging Face、普通 DeepSpeed）不保存 universal_checkpoint_info；此时 DeepSpeed 的 ds_to_universal 需要 --inject_missing_state，此选项即执行该操作。</translation>
    </message>
    <message>
        <location filename="../app/universal_dialog.cpp" line="64" />
        <source>Tag</source>
        <translation>标签</translation>
    </message>
    <message>
        <location filename="../app/universal_dialog.cpp" line="65" />
        <location filename="../app/universal_dialog.cpp" line="89" />
        <source>Universal folder</source>
        <translation>Universal 文件夹</translation>
    </message>
    <message>
        <location filename="../app/universal_dialog.cpp" line="70" />
        <source>The tag is read from its URL; the Universal folder is written on this computer.</source>
        <translation>从 URL 读取该标签；Universal 文件夹写在本机上。</translation>
    </message>
    <message>
        <location filename="../app/universal_dialog.cpp" line="74" />
        <source>latest_universal is written beside the Universal folder: resume with "checkpoint": {"load_universal": true} and load_checkpoint(its parent).</source>
        <translation>latest_universal 写在 Universal 文件夹旁：使用 "checkpoint": {"load_universal": true} 和 load_checkpoint(其父文件夹) 恢复训练。</translation>
    </message>
    <message>
        <location filename="../app/universal_dialog.cpp" line="78" />
        <source>Convert</source>
        <translation>转换</translation>
    </message>
    <message>
        <location filename="../app/universal_dialog.cpp" line="78" />
        <source>Open result</source>
        <translation>打开结果</translation>
    </message>
    <message>
        <location filename="../app/universal_dialog.cpp" line="183" />
        <source>Choose the Universal folder first.</source>
        <translation>请先选择 Universal 文件夹。</translation>
    </message>
    <message>
        <location filename="../app/universal_dialog.cpp" line="192" />
        <source>Nothing written: %1 holds files. Choose an empty folder, or replace the conversion in it.</source>
        <translation>未写入任何内容：%1 中已有文件。请选择空文件夹，或替换其中的转换结果。</translation>
    </message>
    <message>
        <location filename="../app/universal_dialog.cpp" line="227" />
        <source>Wrote %1: ZeRO stage %2 of %3 ranks, %4 parameters, %5 files, %6 in %7 s (%8 GB/s). latest_universal is in %9.</source>
        <translation>已写入 %1：ZeRO 阶段 %2，%3 个 rank，%4 个参数，%5 个文件，%6，用时 %7 秒（%8 GB/s）。latest_universal 位于 %9。</translation>
    </message>
    <message>
        <location filename="../app/universal_dialog.cpp" line="78" />
        <source>Conversion failed</source>
        <translation>转换失败</translation>
    </message>
</context>
<context>
    <name>ckpt::app::VerifyDialog</name>
    <message>
        <location filename="../app/verify_dialog.cpp" line="24" />
        <source>Verify %1</source>
        <translation>校验 %1</translation>
    </message>
    <message>
        <location filename="../app/verify_dialog.cpp" line="26" />
        <source>Reads every file of the checkpoint once: the files its format needs are all there, each zip record's CRC-32 (which torch.load never checks), safetensors offsets, archives to their end, and a manifest's SHA-256 where there is one (Megatron's integrity.json). Nothing is written.</source>
        <translation>将检查点的每个文件读取一遍：格式所需的文件都在，每条 zip 记录的 CRC-32（torch.load 从不检查），safetensors 偏移，归档读到末尾，以及清单中的 SHA-256（如 Megatron 的 integrity.json）。不写入任何东西。</translation>
    </message>
    <message>
        <location filename="../app/verify_dialog.cpp" line="36" />
        <source>Checkpoint</source>
        <translation>检查点</translation>
    </message>
    <message>
        <location filename="../app/verify_dialog.cpp" line="37" />
        <source>Tag</source>
        <translation>标签</translation>
    </message>
    <message>
        <location filename="../app/verify_dialog.cpp" line="38" />
        <source>Every tag</source>
        <translation>所有标签</translation>
    </message>
    <message>
        <location filename="../app/verify_dialog.cpp" line="46" />
        <source>File</source>
        <translation>文件</translation>
    </message>
    <message>
        <location filename="../app/verify_dialog.cpp" line="46" />
        <source>Format</source>
        <translation>格式</translation>
    </message>
    <message>
        <location filename="../app/verify_dialog.cpp" line="46" />
        <source>Status</source>
        <translation>状态</translation>
    </message>
    <message>
        <location filename="../app/verify_dialog.cpp" line="46" />
        <source>Problem</source>
        <translation>问题</translation>
    </message>
    <message>
        <location filename="../app/verify_dialog.cpp" line="57" />
        <source>Verify</source>
        <translation>校验</translation>
    </message>
    <message>
        <location filename="../app/verify_dialog.cpp" line="57" />
        <source>Close</source>
        <translation>关闭</translation>
    </message>
    <message>
        <location filename="../app/verify_dialog.cpp" line="57" />
        <source>Verify failed</source>
        <translation>校验失败</translation>
    </message>
    <message numerus="yes">
        <location filename="../app/verify_dialog.cpp" line="120" />
        <source>Whole: %n file(s), %1 read.</source>
        <translation><numerusform>完整：%n 个文件，读取 %1。</numerusform></translation>
    </message>
    <message numerus="yes">
        <location filename="../app/verify_dialog.cpp" line="122" />
        <source>Damaged: %n file(s) of %1, and %2 problem(s) beyond one file.</source>
        <translation><numerusform>已损坏：%1 个文件中 %n 个，另有 %2 个跨文件的问题。</numerusform></translation>
    </message>
    <message>
        <location filename="../app/verify_dialog.cpp" line="135" />
        <source>✓ whole</source>
        <translation>✓ 完整</translation>
    </message>
    <message>
        <location filename="../app/verify_dialog.cpp" line="136" />
        <source>not covered by a checksum</source>
        <translation>无校验和覆盖</translation>
    </message>
    <message>
        <location filename="../app/verify_dialog.cpp" line="137" />
        <source>✗ missing</source>
        <translation>✗ 缺失</translation>
    </message>
    <message>
        <location filename="../app/verify_dialog.cpp" line="138" />
        <source>✗ damaged</source>
        <translation>✗ 已损坏</translation>
    </message>
</context>
<context>
    <name>ckpt::layout</name>
    <message>
        <location filename="../model/layout/checkpoint.cpp" line="58" />
        <source>model states</source>
        <translation>模型状态</translation>
    </message>
    <message>
        <location filename="../model/layout/checkpoint.cpp" line="60" />
        <source>optimizer states</source>
        <translation>优化器状态文件</translation>
    </message>
    <message>
        <location filename="../model/layout/checkpoint.cpp" line="62" />
        <source>pipeline layer</source>
        <translation>流水线层</translation>
    </message>
    <message>
        <location filename="../model/layout/checkpoint.cpp" line="64" />
        <source>MoE expert</source>
        <translation>MoE 专家</translation>
    </message>
    <message>
        <location filename="../model/layout/checkpoint.cpp" line="66" />
        <source>MoE expert optimizer</source>
        <translation>MoE 专家优化器</translation>
    </message>
    <message>
        <location filename="../model/layout/checkpoint.cpp" line="68" />
        <source>RNG state</source>
        <translation>随机数状态</translation>
    </message>
    <message>
        <location filename="../model/layout/checkpoint.cpp" line="70" />
        <source>LR scheduler</source>
        <translation>学习率调度器</translation>
    </message>
    <message>
        <location filename="../model/layout/checkpoint.cpp" line="72" />
        <source>training arguments</source>
        <translation>训练参数</translation>
    </message>
    <message>
        <location filename="../model/layout/checkpoint.cpp" line="74" />
        <source>other</source>
        <translation>其他</translation>
    </message>
    <message>
        <location filename="../model/layout/checkpoint.cpp" line="151" />
        <source>yes</source>
        <translation>是</translation>
    </message>
    <message>
        <location filename="../model/layout/checkpoint.cpp" line="152" />
        <source>no</source>
        <translation>否</translation>
    </message>
    <message>
        <location filename="../model/layout/accelerate_family.cpp" line="167" />
        <location filename="../model/layout/composer_family.cpp" line="204" />
        <location filename="../model/layout/dcp_family.cpp" line="147" />
        <location filename="../model/layout/dcp_family.cpp" line="170" />
        <location filename="../model/layout/lightning_family.cpp" line="139" />
        <location filename="../model/layout/megatron_family.cpp" line="675" />
        <location filename="../model/layout/megatron_family.cpp" line="823" />
        <location filename="../model/layout/verl_family.cpp" line="261" />
        <source>framework</source>
        <translation>框架</translation>
    </message>
    <message>
        <location filename="../model/layout/accelerate_family.cpp" line="181" />
        <source>FSDP sharded state dict</source>
        <translation>FSDP 分片状态字典</translation>
    </message>
    <message>
        <location filename="../model/layout/accelerate_family.cpp" line="188" />
        <source>prepared models</source>
        <translation>已准备的模型数</translation>
    </message>
    <message>
        <location filename="../model/layout/accelerate_family.cpp" line="219" />
        <source>save number</source>
        <translation>保存序号</translation>
    </message>
    <message>
        <location filename="../model/layout/accelerate_family.cpp" line="229" />
        <source>Accelerate save_state checkpoint</source>
        <translation>Accelerate save_state 检查点</translation>
    </message>
    <message>
        <location filename="../model/layout/composer_family.cpp" line="208" />
        <location filename="../model/layout/dcp_family.cpp" line="149" />
        <source>Composer version</source>
        <translation>Composer 版本</translation>
    </message>
    <message>
        <location filename="../model/layout/composer_family.cpp" line="210" />
        <location filename="../model/layout/dcp_family.cpp" line="151" />
        <source>precision</source>
        <translation>精度</translation>
    </message>
    <message>
        <location filename="../model/layout/composer_family.cpp" line="212" />
        <location filename="../model/layout/composer_family.cpp" line="214" />
        <location filename="../model/layout/dcp_family.cpp" line="152" />
        <location filename="../model/layout/verl_family.cpp" line="263" />
        <source>world size</source>
        <translation>进程总数</translation>
    </message>
    <message>
        <location filename="../model/layout/composer_family.cpp" line="217" />
        <source>PyTorch version</source>
        <translation>PyTorch 版本</translation>
    </message>
    <message>
        <location filename="../model/layout/composer_family.cpp" line="219" />
        <source>device</source>
        <translation>设备</translation>
    </message>
    <message>
        <location filename="../model/layout/composer_family.cpp" line="221" />
        <location filename="../model/layout/dcp_family.cpp" line="153" />
        <source>run name</source>
        <translation>运行名称</translation>
    </message>
    <message>
        <location filename="../model/layout/composer_family.cpp" line="224" />
        <source>weights only</source>
        <translation>仅权重</translation>
    </message>
    <message>
        <location filename="../model/layout/composer_family.cpp" line="226" />
        <source>optimizer class</source>
        <translation>优化器类</translation>
    </message>
    <message>
        <location filename="../model/layout/composer_family.cpp" line="232" />
        <location filename="../model/layout/dcp_family.cpp" line="155" />
        <source>batches</source>
        <translation>批次数</translation>
    </message>
    <message>
        <location filename="../model/layout/composer_family.cpp" line="233" />
        <location filename="../model/layout/dcp_family.cpp" line="156" />
        <source>samples</source>
        <translation>样本数</translation>
    </message>
    <message>
        <location filename="../model/layout/composer_family.cpp" line="234" />
        <source>tokens</source>
        <translation>token 数</translation>
    </message>
    <message>
        <location filename="../model/layout/composer_family.cpp" line="238" />
        <source>wall-clock time</source>
        <translation>实际耗时</translation>
    </message>
    <message>
        <location filename="../model/layout/composer_family.cpp" line="241" />
        <source>Hugging Face model embedded</source>
        <translation>内嵌 Hugging Face 模型</translation>
    </message>
    <message>
        <location filename="../model/layout/composer_family.cpp" line="310" />
        <location filename="../model/layout/hf_family.cpp" line="393" />
        <source>model type</source>
        <translation>模型类型</translation>
    </message>
    <message>
        <location filename="../model/layout/composer_family.cpp" line="311" />
        <location filename="../model/layout/hf_family.cpp" line="394" />
        <source>architecture</source>
        <translation>架构</translation>
    </message>
    <message>
        <location filename="../model/layout/composer_family.cpp" line="312" />
        <location filename="../model/layout/hf_family.cpp" line="401" />
        <source>config.json dtype</source>
        <translation>config.json 数据类型</translation>
    </message>
    <message>
        <location filename="../model/layout/composer_family.cpp" line="313" />
        <location filename="../model/layout/hf_family.cpp" line="395" />
        <source>Transformers version</source>
        <translation>Transformers 版本</translation>
    </message>
    <message>
        <location filename="../model/layout/composer_family.cpp" line="439" />
        <source>rank tarballs</source>
        <translation>rank 压缩包数</translation>
    </message>
    <message>
        <location filename="../model/layout/composer_family.cpp" line="466" />
        <location filename="../model/layout/composer_family.cpp" line="479" />
        <location filename="../model/layout/composer_family.cpp" line="489" />
        <source>archive</source>
        <translation>归档格式</translation>
    </message>
    <message>
        <location filename="../model/layout/composer_family.cpp" line="555" />
        <source>Composer checkpoint</source>
        <translation>Composer 检查点</translation>
    </message>
    <message>
        <location filename="../model/layout/dcp_family.cpp" line="173" />
        <source>step</source>
        <translation>步</translation>
    </message>
    <message>
        <location filename="../model/layout/dcp_family.cpp" line="177" />
        <source>tokens seen (one rank's count)</source>
        <translation>已处理 token 数（单个 rank 的计数）</translation>
    </message>
    <message>
        <location filename="../model/layout/dcp_family.cpp" line="246" />
        <location filename="../model/layout/dcp_safetensors_family.cpp" line="246" />
        <source>format</source>
        <translation>格式</translation>
    </message>
    <message>
        <location filename="../model/layout/dcp_family.cpp" line="248" />
        <location filename="../model/layout/dcp_safetensors_family.cpp" line="248" />
        <source>DCP version</source>
        <translation>DCP 版本</translation>
    </message>
    <message>
        <location filename="../model/layout/dcp_family.cpp" line="249" />
        <location filename="../model/layout/megatron_family.cpp" line="578" />
        <location filename="../model/layout/megatron_family.cpp" line="662" />
        <source>layout</source>
        <translation>布局</translation>
    </message>
    <message>
        <location filename="../model/layout/dcp_family.cpp" line="250" />
        <location filename="../model/layout/dcp_safetensors_family.cpp" line="249" />
        <source>ranks</source>
        <translation>rank 数</translation>
    </message>
    <message>
        <location filename="../model/layout/dcp_family.cpp" line="381" />
        <source>PyTorch DCP checkpoint</source>
        <translation>PyTorch DCP 检查点</translation>
    </message>
    <message>
        <location filename="../model/layout/deepspeed_family.cpp" line="18" />
        <source>DeepSpeed checkpoint</source>
        <translation>DeepSpeed 检查点</translation>
    </message>
    <message>
        <location filename="../model/layout/deepspeed_family.cpp" line="57" />
        <source>0 (disabled: plain data parallelism)</source>
        <translation>0（未启用：普通数据并行）</translation>
    </message>
    <message>
        <location filename="../model/layout/deepspeed_family.cpp" line="58" />
        <source>1 (optimizer states partitioned)</source>
        <translation>1（切分优化器状态）</translation>
    </message>
    <message>
        <location filename="../model/layout/deepspeed_family.cpp" line="59" />
        <source>2 (optimizer states and gradients partitioned)</source>
        <translation>2（切分优化器状态和梯度）</translation>
    </message>
    <message>
        <location filename="../model/layout/deepspeed_family.cpp" line="60" />
        <source>3 (optimizer states, gradients and parameters partitioned)</source>
        <translation>3（切分优化器状态、梯度和参数）</translation>
    </message>
    <message>
        <location filename="../model/layout/deepspeed_family.cpp" line="62" />
        <location filename="../model/layout/deepspeed_family.cpp" line="101" />
        <source>unknown</source>
        <translation>未知</translation>
    </message>
    <message>
        <location filename="../model/layout/deepspeed_family.cpp" line="65" />
        <source>ZeRO stage</source>
        <translation>ZeRO 阶段</translation>
    </message>
    <message>
        <location filename="../model/layout/deepspeed_family.cpp" line="68" />
        <location filename="../model/layout/megatron_family.cpp" line="122" />
        <source>optimizer</source>
        <translation>优化器</translation>
    </message>
    <message>
        <location filename="../model/layout/deepspeed_family.cpp" line="70" />
        <source>DeepSpeed BF16_Optimizer (ZeRO-1 layout)</source>
        <translation>DeepSpeed BF16_Optimizer（ZeRO-1 布局）</translation>
    </message>
    <message>
        <location filename="../model/layout/deepspeed_family.cpp" line="71" />
        <source>DeepSpeed ZeRO optimizer</source>
        <translation>DeepSpeed ZeRO 优化器</translation>
    </message>
    <message>
        <location filename="../model/layout/deepspeed_family.cpp" line="76" />
        <source>none saved</source>
        <translation>未保存</translation>
    </message>
    <message>
        <location filename="../model/layout/deepspeed_family.cpp" line="79" />
        <source>data-parallel ranks</source>
        <translation>数据并行 rank 数</translation>
    </message>
    <message>
        <location filename="../model/layout/deepspeed_family.cpp" line="80" />
        <source>model-parallel ranks</source>
        <translation>模型并行 rank 数</translation>
    </message>
    <message>
        <location filename="../model/layout/deepspeed_family.cpp" line="93" />
        <source>pipeline stages</source>
        <translation>流水线阶段</translation>
    </message>
    <message>
        <location filename="../model/layout/deepspeed_family.cpp" line="96" />
        <location filename="../model/layout/megatron_family.cpp" line="116" />
        <source>experts</source>
        <translation>专家</translation>
    </message>
    <message>
        <location filename="../model/layout/deepspeed_family.cpp" line="99" />
        <location filename="../model/layout/hf_family.cpp" line="402" />
        <source>dtype</source>
        <translation>数据类型</translation>
    </message>
    <message>
        <location filename="../model/layout/deepspeed_family.cpp" line="100" />
        <source>DeepSpeed version</source>
        <translation>DeepSpeed 版本</translation>
    </message>
    <message>
        <location filename="../model/layout/deepspeed_family.cpp" line="102" />
        <source>step / samples</source>
        <translation>步数 / 样本数</translation>
    </message>
    <message>
        <location filename="../model/layout/deepspeed_family.cpp" line="105" />
        <source>skipped steps</source>
        <translation>跳过的步数</translation>
    </message>
    <message>
        <location filename="../model/layout/hf_family.cpp" line="106" />
        <source>Hugging Face model folder</source>
        <translation>Hugging Face 模型文件夹</translation>
    </message>
    <message>
        <location filename="../model/layout/hf_family.cpp" line="185" />
        <source>index file</source>
        <translation>索引文件</translation>
    </message>
    <message>
        <location filename="../model/layout/hf_family.cpp" line="413" />
        <location filename="../model/layout/megatron_family.cpp" line="104" />
        <source>hidden size</source>
        <translation>隐藏层大小</translation>
    </message>
    <message>
        <location filename="../model/layout/hf_family.cpp" line="416" />
        <location filename="../model/layout/megatron_family.cpp" line="103" />
        <source>layers</source>
        <translation>层数</translation>
    </message>
    <message>
        <location filename="../model/layout/hf_family.cpp" line="419" />
        <location filename="../model/layout/megatron_family.cpp" line="105" />
        <source>attention heads</source>
        <translation>注意力头数</translation>
    </message>
    <message>
        <location filename="../model/layout/hf_family.cpp" line="421" />
        <source>vocabulary</source>
        <translation>词表大小</translation>
    </message>
    <message>
        <location filename="../model/layout/composer_family.cpp" line="434" />
        <location filename="../model/layout/trainer_family.cpp" line="153" />
        <source>DeepSpeed tag</source>
        <translation>DeepSpeed 标签</translation>
    </message>
    <message>
        <location filename="../model/layout/lightning_family.cpp" line="141" />
        <source>Lightning version</source>
        <translation>Lightning 版本</translation>
    </message>
    <message>
        <location filename="../model/layout/lightning_family.cpp" line="145" />
        <location filename="../model/layout/trainer_family.cpp" line="194" />
        <source>global step</source>
        <translation>全局步数</translation>
    </message>
    <message>
        <location filename="../model/layout/lightning_family.cpp" line="187" />
        <source>names without the prefix</source>
        <translation>去掉前缀的名称</translation>
    </message>
    <message>
        <location filename="../model/layout/lightning_family.cpp" line="199" />
        <source>PyTorch Lightning checkpoint</source>
        <translation>PyTorch Lightning 检查点</translation>
    </message>
    <message>
        <location filename="../model/layout/lightning_family.cpp" line="250" />
        <source>Lightning strategy save</source>
        <translation>Lightning 策略保存</translation>
    </message>
    <message>
        <location filename="../model/layout/composer_family.cpp" line="231" />
        <location filename="../model/layout/dcp_family.cpp" line="154" />
        <location filename="../model/layout/lightning_family.cpp" line="143" />
        <location filename="../model/layout/trainer_family.cpp" line="195" />
        <source>epoch</source>
        <translation>轮次</translation>
    </message>
    <message>
        <location filename="../model/layout/trainer_family.cpp" line="197" />
        <source>best checkpoint</source>
        <translation>最佳检查点</translation>
    </message>
    <message>
        <location filename="../model/layout/trainer_family.cpp" line="199" />
        <source>best metric</source>
        <translation>最佳指标</translation>
    </message>
    <message>
        <location filename="../model/layout/trainer_family.cpp" line="200" />
        <source>log entries</source>
        <translation>日志条目</translation>
    </message>
    <message>
        <location filename="../model/layout/trainer_family.cpp" line="260" />
        <source>Trainer files</source>
        <translation>Trainer 文件</translation>
    </message>
    <message>
        <location filename="../model/layout/trainer_family.cpp" line="276" />
        <source>Hugging Face Trainer run</source>
        <translation>Hugging Face Trainer 训练目录</translation>
    </message>
    <message>
        <location filename="../model/layout/universal.cpp" line="157" />
        <source>DeepSpeed Universal checkpoint</source>
        <translation>DeepSpeed Universal 检查点</translation>
    </message>
    <message>
        <location filename="../model/layout/megatron_family.cpp" line="106" />
        <source>query groups</source>
        <translation>查询组数</translation>
    </message>
    <message>
        <location filename="../model/layout/megatron_family.cpp" line="107" />
        <source>FFN size</source>
        <translation>FFN 大小</translation>
    </message>
    <message>
        <location filename="../model/layout/megatron_family.cpp" line="108" />
        <source>vocabulary (padded)</source>
        <translation>词表大小（填充后）</translation>
    </message>
    <message>
        <location filename="../model/layout/megatron_family.cpp" line="109" />
        <source>max positions</source>
        <translation>最大位置数</translation>
    </message>
    <message>
        <location filename="../model/layout/megatron_family.cpp" line="110" />
        <source>position embedding</source>
        <translation>位置编码</translation>
    </message>
    <message>
        <location filename="../model/layout/megatron_family.cpp" line="111" />
        <source>normalization</source>
        <translation>归一化</translation>
    </message>
    <message>
        <location filename="../model/layout/megatron_family.cpp" line="112" />
        <source>SwiGLU</source>
        <translation>SwiGLU</translation>
    </message>
    <message>
        <location filename="../model/layout/megatron_family.cpp" line="113" />
        <source>linear biases</source>
        <translation>线性层偏置</translation>
    </message>
    <message>
        <location filename="../model/layout/megatron_family.cpp" line="114" />
        <source>QKV bias</source>
        <translation>QKV 偏置</translation>
    </message>
    <message>
        <location filename="../model/layout/megatron_family.cpp" line="115" />
        <source>untied embeddings</source>
        <translation>输入输出嵌入不共享</translation>
    </message>
    <message>
        <location filename="../model/layout/megatron_family.cpp" line="117" />
        <source>experts per token</source>
        <translation>每个 token 的专家数</translation>
    </message>
    <message>
        <location filename="../model/layout/megatron_family.cpp" line="118" />
        <source>tensor-parallel size</source>
        <translation>张量并行规模</translation>
    </message>
    <message>
        <location filename="../model/layout/megatron_family.cpp" line="119" />
        <source>pipeline-parallel size</source>
        <translation>流水线并行规模</translation>
    </message>
    <message>
        <location filename="../model/layout/megatron_family.cpp" line="120" />
        <source>expert-parallel size</source>
        <translation>专家并行规模</translation>
    </message>
    <message>
        <location filename="../model/layout/megatron_family.cpp" line="121" />
        <source>consumed samples</source>
        <translation>已消耗样本数</translation>
    </message>
    <message>
        <location filename="../model/layout/megatron_family.cpp" line="123" />
        <source>distributed optimizer</source>
        <translation>分布式优化器</translation>
    </message>
    <message>
        <location filename="../model/layout/megatron_family.cpp" line="258" />
        <source>exports as</source>
        <translation>导出为</translation>
    </message>
    <message>
        <location filename="../model/layout/megatron_family.cpp" line="638" />
        <location filename="../model/layout/megatron_family.cpp" line="641" />
        <source>optimizer state</source>
        <translation>优化器状态</translation>
    </message>
    <message>
        <location filename="../model/layout/megatron_family.cpp" line="704" />
        <source>Megatron-Core checkpoint</source>
        <translation>Megatron-Core 检查点</translation>
    </message>
    <message>
        <location filename="../model/layout/verl_family.cpp" line="262" />
        <source>role</source>
        <translation>角色</translation>
    </message>
    <message>
        <location filename="../model/layout/verl_family.cpp" line="269" />
        <source>FSDP version</source>
        <translation>FSDP 版本</translation>
    </message>
    <message>
        <location filename="../model/layout/verl_family.cpp" line="285" />
        <source>device mesh</source>
        <translation>设备网格</translation>
    </message>
    <message>
        <location filename="../model/layout/verl_family.cpp" line="286" />
        <source>placements</source>
        <translation>放置方式</translation>
    </message>
    <message>
        <location filename="../model/layout/verl_family.cpp" line="390" />
        <source>LR scheduler step</source>
        <translation>学习率调度器步数</translation>
    </message>
    <message>
        <location filename="../model/layout/verl_family.cpp" line="414" />
        <source>critic</source>
        <translation>评论家模型 (critic)</translation>
    </message>
    <message>
        <location filename="../model/layout/verl_family.cpp" line="415" />
        <source>actor</source>
        <translation>演员模型 (actor)</translation>
    </message>
    <message>
        <location filename="../model/layout/verl_family.cpp" line="435" />
        <source>verl checkpoint</source>
        <translation>verl 检查点</translation>
    </message>
    <message>
        <location filename="../model/layout/dcp_safetensors_family.cpp" line="259" />
        <source>PyTorch DCP over safetensors</source>
        <translation>基于 safetensors 的 PyTorch DCP</translation>
    </message>
</context>
<context>
    <name>main</name>
    <message>
        <location filename="../app/main.cpp" line="114" />
        <source>Checkpoint Studio</source>
        <translation>Checkpoint Studio</translation>
    </message>
    <message>
        <location filename="../app/main.cpp" line="214" />
        <source>Inspect, consolidate and convert training checkpoints</source>
        <translation>查看、合并和转换训练检查点</translation>
    </message>
    <message>
        <location filename="../app/main.cpp" line="51" />
        <source>Save a screenshot of the window once PATH is open, then exit.</source>
        <translation>打开 PATH 后保存窗口截图并退出。</translation>
    </message>
    <message>
        <location filename="../app/main.cpp" line="54" />
        <source>Select this item of the tree first.</source>
        <translation>先在树中选中此项目。</translation>
    </message>
    <message>
        <location filename="../app/main.cpp" line="58" />
        <source>Save a screenshot of the export dialog while it runs, then exit.</source>
        <translation>导出运行时保存导出对话框的截图并退出。</translation>
    </message>
    <message>
        <location filename="../app/main.cpp" line="62" />
        <source>Colours: system (follow the desktop), light or dark. The default is the "palette" setting, else system.</source>
        <translation>配色：system（跟随桌面）、light（浅色）或 dark（深色）。默认取 "palette" 设置，否则为 system。</translation>
    </message>
    <message>
        <location filename="../app/main.cpp" line="67" />
        <source>Show where the bytes of this file or folder go (the Bloat view). With --screenshot, save the window once that is computed; with --screenshot-export, the Slim dialog once it has slimmed it into a temporary folder.</source>
        <translation>在膨胀分析视图中显示此文件或文件夹的字节去向。配合 --screenshot 时，计算完成后保存窗口截图；配合 --screenshot-export 时，将其精简到临时文件夹后保存精简对话框的截图。</translation>
    </message>
    <message>
        <location filename="../app/main.cpp" line="75" />
        <source>Compare A with the checkpoint, tag folder or file B given as the path (the comparison window). With --screenshot, save it once computed; with --select, that tensor selected.</source>
        <translation>将 A 与作为路径给出的检查点、标签文件夹或文件 B 进行比较（比较窗口）。配合 --screenshot 时，计算完成后保存截图；配合 --select 时，先选中该张量。</translation>
    </message>
    <message>
        <location filename="../app/main.cpp" line="82" />
        <source>With --compare: the tag of A (default: its latest).</source>
        <translation>与 --compare 一起使用：A 的标签（默认：其最新标签）。</translation>
    </message>
    <message>
        <location filename="../app/main.cpp" line="86" />
        <source>With --compare: the tag of B (default: its latest).</source>
        <translation>与 --compare 一起使用：B 的标签（默认：其最新标签）。</translation>
    </message>
    <message>
        <location filename="../app/main.cpp" line="90" />
        <source>With --compare: the optimizer moments (exp_avg, exp_avg_sq) too.</source>
        <translation>与 --compare 一起使用：同时比较优化器矩（exp_avg、exp_avg_sq）。</translation>
    </message>
    <message>
        <location filename="../app/main.cpp" line="93" />
        <source>Save a screenshot of the Preferences dialog, then exit.</source>
        <translation>保存首选项对话框的截图，然后退出。</translation>
    </message>
    <message>
        <location filename="../app/main.cpp" line="219" />
        <source>Checkpoint folder or file to open.</source>
        <translation>要打开的检查点文件夹或文件。</translation>
    </message>
</context>
</TS>